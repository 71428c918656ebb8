package remote_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/remote"
)

// Count prompts with the serving engine's own tokenizer and chat template:
// here the embedded simulated engine's vLLM-flavoured /tokenize, which
// counts as the sim's Counter does.
func ExampleVLLM() {
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer srv.Close()
	c := &remote.VLLM{BaseURL: srv.VLLMURL, Model: srv.Model()}

	msgs := []promptsize.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Count to ten."}}
	n, err := c.Count(context.Background(), msgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	local, _ := srv.Counter().Count(context.Background(), msgs)
	fmt.Println("the server's count equals the local one:", n == local)

	// A remote Counter plugs into a Builder like any other.
	b := &promptsize.Builder{Counter: c}
	p, err := b.Build(context.Background(), 100)
	fmt.Println(p.Tokens, err)

	// A server without the endpoint is an *EndpointError, which names a
	// Counter to try instead.
	_, err = (&remote.VLLM{BaseURL: srv.URL, Path: "/no-such-endpoint"}).Count(context.Background(), msgs)
	var ee *remote.EndpointError
	fmt.Println(errors.Is(err, remote.ErrNoEndpoint), errors.As(err, &ee) && ee.Status == 404)
	// Output:
	// the server's count equals the local one: true
	// 100 <nil>
	// true true
}
