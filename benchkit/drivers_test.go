package benchkit

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// fixedEngine answers every request with one result, built fresh on a
// trace that starts at the call: the same chunks, counts and error
// whichever driver sent it.
type fixedEngine struct {
	result func(start time.Time) (engine.Result, error)
}

func (f fixedEngine) Complete(ctx context.Context, req engine.Request) (engine.Result, error) {
	start := time.Now()
	engine.NotifySend(ctx, start)
	return f.result(start)
}

// TestEveryDriverRecordsTheSameRequest feeds one engine result to every
// driver — the Runner (the exo sweep's and disaggregation's), a Load's
// burst, open loop and closed loop, SendPrompts — and checks that each records the
// same request: the same figures by the same rules (completion tokens,
// the server's prompt count, TTFT anchors, per-token gaps, the
// implausible-usage guard, energy and server stats fields, warnings with
// their codes). Only what places a request (its labels and offsets) may
// differ.
func TestEveryDriverRecordsTheSameRequest(t *testing.T) {
	const pp, tg = 24, 4
	ctx := context.Background()
	b := &promptsize.Builder{Counter: wordCounter}
	connect := 3 * time.Millisecond
	chunks := func(start time.Time) timing.Trace {
		// A role chunk at 8 ms, then the text in chunks of 1, 2 and 1
		// tokens: TTFT 10 ms, the first-chunk TTFT 8 ms, gaps per token.
		tr := timing.Trace{Start: start, FirstChunk: start.Add(8 * time.Millisecond)}
		for i, k := range []int{1, 2, 1} {
			tr.Chunks = append(tr.Chunks, timing.Chunk{At: start.Add(time.Duration(10+4*i) * time.Millisecond), Tokens: k})
		}
		tr.End = start.Add(20 * time.Millisecond)
		return tr
	}
	cases := []struct {
		name   string
		result func(start time.Time) (engine.Result, error)
		check  func(t *testing.T, r Request)
	}{
		{"honest", func(start time.Time) (engine.Result, error) {
			return engine.Result{Trace: chunks(start), ResponseID: "r1", FinishReason: "length", Connect: &connect,
				Usage:       &engine.Usage{PromptTokens: pp, CompletionTokens: tg},
				ServerStats: &engine.ServerStats{PromptTPS: 1000, GenerationTPS: 200, PromptTokens: pp, GenerationTokens: tg}}, nil
		}, func(t *testing.T, r Request) {
			if r.Tokens() != tg || r.TTFTS == nil || r.TTFTFirstChunkS == nil || len(r.ITLS) != tg-1 || r.Stats == nil || r.ConnectS == nil {
				t.Errorf("honest request: %+v", r)
			}
		}},
		{"mismatch and short", func(start time.Time) (engine.Result, error) {
			return engine.Result{Trace: chunks(start), Usage: &engine.Usage{PromptTokens: pp + 2, CompletionTokens: tg - 1}}, nil
		}, func(t *testing.T, r Request) {
			if !r.HasWarning(WarnPromptMismatch) || !r.HasWarning(WarnShortGeneration) || *r.ServerPromptTokens != pp+2 || r.Tokens() != tg-1 {
				t.Errorf("warnings %v, server prompt %v, tokens %d; want both warnings, %d and %d", r.Warnings, r.ServerPromptTokens, r.Tokens(), pp+2, tg-1)
			}
		}},
		{"implausible", func(start time.Time) (engine.Result, error) {
			res := engine.Result{Trace: chunks(start), ServerStats: &engine.ServerStats{GenerationTokens: 1 << 62}}
			return res, &engine.Error{Kind: engine.KindImplausibleUsage, Op: "fixed", Err: context.DeadlineExceeded}
		}, func(t *testing.T, r Request) {
			if r.CompletionTokens != nil || r.Stats != nil || r.TPOTS != nil || r.ITLS != nil || r.TTFTS == nil || r.ErrorKind != string(engine.KindImplausibleUsage) {
				t.Errorf("implausible request keeps figures resting on the server's counts: %+v", r)
			}
		}},
	}
	// What places a request, which drivers set each their own way.
	placing := cmpopts.IgnoreFields(Request{}, "Labels", "Index", "IntendedSendS", "SendOffsetS", "DoneS",
		"DispatchSkewS", "ConcurrentIndex", "PlanFields", "Model", "ModelShortID")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := fixedEngine{tc.result}
			got := map[string]Request{}

			r := &Runner{Engine: e, Model: "m", Builder: b}
			rep, err := r.Run(ctx, Plan{PP: []int{pp}, TG: []int{tg}, Stream: true})
			if err != nil || len(rep.Requests) != 1 {
				t.Fatalf("Runner: %v, %d requests", err, len(rep.Requests))
			}
			got["runner"] = rep.Requests[0]

			for name, tr := range map[string]Traffic{"load burst": {Burst: 1}, "load open loop": {Rate: 1000, NumRequests: 1},
				"load closed loop": {Users: 1, NumRequests: 1}} {
				l := &Load{Engine: e, Model: "m", Builder: b, NoSalt: true}
				run, err := l.Run(ctx, Lengths{Input: pp, Output: tg}, tr, timing.SLO{})
				if err != nil || len(run.Requests) != 1 {
					t.Fatalf("%s: %v, %d requests", name, err, len(run.Requests))
				}
				got[name] = run.Requests[0]
			}

			p, err := b.Build(ctx, pp)
			if err != nil {
				t.Fatal(err)
			}
			br, err := SendPrompts(ctx, e, "m", tg, []promptsize.Prompt{p}, nil)
			if err != nil || len(br.Requests) != 1 {
				t.Fatalf("SendPrompts: %v, %d requests", err, len(br.Requests))
			}
			got["burst"] = br.Requests[0]

			want := got["runner"]
			tc.check(t, want)
			for name, r := range got {
				if diff := cmp.Diff(want, r, placing); diff != "" {
					t.Errorf("%s records the request otherwise than the Runner (-runner +%s):\n%s", name, name, diff)
				}
			}
		})
	}
}
