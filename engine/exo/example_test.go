package exo_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
)

// Against the simulated exo cluster: resolve a model by its short name,
// pick a placement, create the instance, wait until it is ready, run one
// bench request, print its statistics and delete the instance. Against a
// real cluster only the URL changes.
func Example() {
	s := sim.NewServer(sim.Options{Preset: sim.Fast(), NoInstance: true, LoadDelay: 10 * time.Millisecond})
	defer s.Close()
	ctx := context.Background()

	c, err := exo.New(s.URL, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.CloseIdleConnections()

	card, err := c.ResolveModel(ctx, "TINY-1B-8BIT", false) // short names match case-insensitively
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("model:", card.FullID())

	placements, err := c.Placements(ctx, card.FullID(), exo.Filter{Sharding: exo.Pipeline, MaxNodes: 1}, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := placements[0]
	fmt.Printf("placement: %s/%s on %d node(s)\n", p.InstanceMeta, p.Sharding, p.Nodes)

	if _, err := c.CreateInstance(ctx, p.Instance); err != nil {
		fmt.Println(err)
		return
	}
	if err := c.WaitReady(ctx, p.Instance.ID, 30*time.Second); err != nil {
		fmt.Println(err)
		return
	}

	res, err := c.Complete(ctx, engine.Request{
		Model:     card.FullID(),
		Messages:  []engine.Message{{Role: "user", Content: strings.Repeat("a ", 100)}},
		MaxTokens: 16,
		IgnoreEOS: true, // exo's bench endpoint: exactly 16 tokens
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	st := res.ServerStats
	fmt.Printf("prompt_tokens=%d generation_tokens=%d prefix_cache_hit=%s\n", st.PromptTokens, st.GenerationTokens, st.PrefixCacheHit)
	fmt.Println("rates reported:", st.PromptTPS > 0, st.GenerationTPS > 0, "energy reported:", res.Power.TotalEnergyJoules > 0)

	if _, err := c.DeleteInstance(ctx, p.Instance.ID); err != nil {
		fmt.Println(err)
		return
	}
	if err := c.WaitGone(ctx, p.Instance.ID, 10*time.Second); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("instance deleted")
	// Output:
	// model: sim/tiny-1b-8bit
	// placement: MlxRing/Pipeline on 1 node(s)
	// prompt_tokens=109 generation_tokens=16 prefix_cache_hit=none
	// rates reported: true true energy reported: true
	// instance deleted
}

// Select applies exo_bench's filters to previews and sorts the survivors in
// its order; the labels come from the instances, so a single-node preview
// that exo labels Tensor (but holds a pipeline instance) is not taken for a
// tensor placement.
func ExampleSelect() {
	s := sim.NewServer(sim.Options{Preset: sim.Fast(), NoInstance: true})
	defer s.Close()
	ctx := context.Background()
	c, err := exo.New(s.URL, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.CloseIdleConnections()

	previews, err := c.Previews(ctx, s.Model())
	if err != nil {
		fmt.Println(err)
		return
	}
	placements, removed, err := exo.Select(previews, exo.Filter{Sharding: exo.Tensor})
	if err != nil {
		fmt.Println(err)
		return
	}
	labelledTensor := 0
	for _, pv := range previews {
		if pv.Sharding == "Tensor" {
			labelledTensor++
		}
	}
	fmt.Printf("previews: %d, labelled Tensor: %d\n", len(previews), labelledTensor)
	for _, p := range placements {
		fmt.Printf("%s/%s nodes=%d\n", p.InstanceMeta, p.Sharding, p.Nodes)
	}
	// 4 labelled Pipeline, and the 2 single-node ones labelled Tensor.
	fmt.Println("removed as not tensor:", removed["sharding"])
	// Output:
	// previews: 8, labelled Tensor: 4
	// MlxRing/Tensor nodes=2
	// MlxJaccl/Tensor nodes=2
	// removed as not tensor: 6
}

// A PowerSource reads every node's exo metrics in one request, as an
// energy.Source that an energy.Sampler can poll.
func ExampleClient_PowerSource() {
	s := sim.NewServer(sim.Options{Preset: sim.Fast(), Nodes: 2})
	defer s.Close()
	c, err := exo.New(s.URL, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.CloseIdleConnections()

	readings, err := c.PowerSource().Read(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	nodes := map[string]bool{}
	for _, r := range readings {
		nodes[r.Node] = true
		if len(nodes) == 1 {
			fmt.Println(r.Metric)
		}
	}
	fmt.Println("nodes:", len(nodes))
	// Output:
	// sysPower
	// gpuUsage
	// temp
	// pcpuUsage
	// ecpuUsage
	// nodes: 2
}
