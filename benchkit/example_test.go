package benchkit_test

import (
	"context"
	"fmt"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
)

// The README's library example: measure the embedded engine's exo API.
func ExampleRunner() {
	ctx := context.Background()
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()}) // or any exo cluster / OpenAI server
	defer srv.Close()
	eng, err := exo.New(srv.URL, nil)
	if err != nil {
		panic(err)
	}
	r := &benchkit.Runner{Engine: eng, Model: srv.Model(),
		Builder: &promptsize.Builder{Counter: srv.Counter()}, Simulated: true}
	rep, err := r.Run(ctx, benchkit.Plan{PP: []int{512}, TG: []int{64}, Concurrency: []int{1, 8}, Repeat: 3})
	if err != nil {
		panic(err)
	}
	exact := 0
	for _, row := range rep.Rows {
		if row.PPTokens == 512 && row.Stats.PromptTokens == 512 && row.Stats.GenerationTokens == 64 {
			exact++
		}
	}
	fmt.Printf("%d rows, %d exact, %d cells, %d failed\n", len(rep.Rows), exact, len(rep.Cells()), rep.Failed())
	// Output:
	// 27 rows, 27 exact, 2 cells, 0 failed
}
