package enginetest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/enginetest"
	"github.com/inferbench/inferbench/timing"
)

// An engine that keeps every contract but one: its error for an unknown
// model is plain text, which no caller can branch on.
func ExampleCheck() {
	e := engine.Func(func(ctx context.Context, req engine.Request) (engine.Result, error) {
		if req.Model != "demo/model" {
			return engine.Result{}, errors.New("no such model")
		}
		var res engine.Result
		res.Trace.Start = time.Now()
		res.Trace.Headers = time.Now()
		if req.MaxTokens > 100 { // a long request: run until cancelled
			<-ctx.Done()
			res.Trace.End = time.Now()
			return res, engine.Wrap(ctx, engine.KindTruncated, "demo", ctx.Err())
		}
		if req.Stream {
			res.Trace.Chunks = []timing.Chunk{{At: time.Now(), Tokens: 1}}
		}
		res.Trace.End = time.Now()
		res.Text = "one"
		return res, nil
	})

	err := enginetest.Check(context.Background(), enginetest.Config{Engine: e, Model: "demo/model", Stream: true})
	fmt.Println(err)
	// Output:
	// enginetest: unknown_model: unstreamed request for model "enginetest/no-such-model": error kind "error", want a typed kind (a 4xx status): no such model
	// enginetest: unknown_model: streamed request for model "enginetest/no-such-model": error kind "error", want a typed kind (a 4xx status): no such model
}
