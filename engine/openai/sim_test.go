package openai

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/enginetest"
	"github.com/inferbench/inferbench/engine/internal/adaptertest"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
)

func newSim(t *testing.T, o sim.Options) *sim.Server { return adaptertest.NewSim(t, o) }

func faultHeader(f string) http.Header { return http.Header{sim.FaultHeader: {f}} }

// TestConformance runs the engine conformance kit against the simulated
// vLLM API over loopback HTTP.
func TestConformance(t *testing.T) {
	s := newSim(t, sim.Options{})
	c := newClient(t, s.VLLMURL, nil)
	// The sim's reset-before-headers flushes a 200 status line before it
	// resets, so the reset is seen while reading the body (truncated);
	// TestResetBeforeHeaders covers a real reset with a raw listener.
	faults := adaptertest.SimFaults()
	enginetest.Run(t, enginetest.Config{
		Engine:      c,
		Model:       s.Model(),
		Stream:      true,
		ChunkTokens: true,
		Bench:       true,
		Usage:       enginetest.Both,
		SendHook:    true,
		NewAt:       adaptertest.NewAt(t, New, nil),
		Faults:      faults,
	})
}

// TestSimBench checks bench semantics end to end: ignore_eos gives exactly
// max_tokens tokens, one per chunk, with usage on every chunk.
func TestSimBench(t *testing.T) {
	s := newSim(t, sim.Options{})
	c := newClient(t, s.VLLMURL+"/v1", nil)
	ctx := context.Background()
	models, err := c.Models(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(models) == 0 || models[0].ID != s.Model() {
		t.Fatalf("Models = %+v, want %s first", models, s.Model())
	}
	if err := c.Prewarm(ctx, 4); err != nil {
		t.Fatal(err)
	}
	msgs := []engine.Message{{Role: "user", Content: "Count to ten."}}
	res, err := c.Complete(ctx, engine.Request{Model: s.Model(), Messages: msgs, MaxTokens: 24, IgnoreEOS: true, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("Warnings = %v", res.Warnings)
	}
	if res.Usage == nil || res.Usage.CompletionTokens != 24 || res.Trace.Tokens() != 24 {
		t.Fatalf("usage %+v, trace tokens %d: want 24", res.Usage, res.Trace.Tokens())
	}
	want, err := s.Counter().Count(ctx, []promptsize.Message{{Role: "user", Content: "Count to ten."}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage.PromptTokens != want {
		t.Errorf("prompt_tokens %d, the sim's counter says %d", res.Usage.PromptTokens, want)
	}
	// The sim's text is one built-in token per word: counting it gives
	// the same per-chunk counts as the usage deltas.
	var fromUsage []int
	for _, ch := range res.Trace.Chunks {
		fromUsage = append(fromUsage, ch.Tokens)
	}
	counted := newClient(t, s.VLLMURL, &Options{NoStreamUsage: true,
		CountText: func(_ context.Context, s string) (int, error) { return sim.CountText(s), nil }})
	res2, err := counted.Complete(ctx, engine.Request{Model: s.Model(), Messages: msgs, MaxTokens: 24, IgnoreEOS: true, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	var fromText []int
	for _, ch := range res2.Trace.Chunks {
		fromText = append(fromText, ch.Tokens)
	}
	if diff := cmp.Diff(fromUsage, fromText); diff != "" {
		t.Errorf("counted chunk tokens differ from usage deltas (-usage +counted):\n%s", diff)
	}
	if len(res2.Warnings) != 1 || !errors.Is(res2.Warnings[0], ErrEstimatedTokens) {
		t.Errorf("Warnings = %v, want one ErrEstimatedTokens", res2.Warnings)
	}
}

// simFaults are the sim's faults and the kinds the adapter must report for
// them, unstreamed ("" when the case has none) and streamed.
func simFaults() []enginetest.Fault {
	type fault struct {
		header           string
		unstreamed, want engine.Kind // want: streamed
	}
	var faults []enginetest.Fault
	for _, f := range []fault{
		{"500", engine.KindStatus, engine.KindStatus},
		{"unknown-model", engine.KindStatus, engine.KindStatus},
		{"reset-mid-stream; after=2", engine.KindTruncated, engine.KindTruncated},
		{"cut-without-done; after=2", engine.KindMalformed, engine.KindTruncated},
		{"malformed-chunk; after=2", engine.KindMalformed, engine.KindMalformed},
		{"error-event; after=2", engine.KindStatus, engine.KindStreamError},
		{"wrong-content-type", engine.KindMalformed, engine.KindMalformed},
		{"empty-body", engine.KindMalformed, engine.KindMalformed},
	} {
		if f.unstreamed != "" {
			faults = append(faults, enginetest.Fault{Name: f.header, Header: faultHeader(f.header), Want: f.unstreamed})
		}
		faults = append(faults, enginetest.Fault{Name: f.header + " (streamed)", Header: faultHeader(f.header), Stream: true, Want: f.want})
	}
	return faults
}

// TestConformanceCompletions runs the conformance kit against the sim's
// /v1/completions, with a prompt of token ids and with a text prompt.
func TestConformanceCompletions(t *testing.T) {
	s := newSim(t, sim.Options{})
	ids := make([]int, 40)
	for i := range ids {
		ids[i] = 1000 + 7*i
	}
	for name, p := range map[string]*engine.Prompt{
		"tokens": {Tokens: ids},
		"text":   {Text: "Once upon a time, in a land far away, there lived"},
	} {
		t.Run(name, func(t *testing.T) {
			enginetest.Run(t, enginetest.Config{
				Engine:      newClient(t, s.VLLMURL, nil),
				Model:       s.Model(),
				Prompt:      p,
				Stream:      true,
				ChunkTokens: true,
				Bench:       true,
				Usage:       enginetest.Both,
				SendHook:    true,
				Faults:      simFaults(),
			})
		})
	}
}

// TestSimCompletionsAblation sends the seed's ablation through Complete
// and /v1/completions: 16 prompts of token ids sharing a 400-token prefix,
// 16 unique each, one after another. The cached_tokens the client reads
// must add up to the sim's own account: 6656 tokens prefilled without
// reuse, 656 with the block cache.
func TestSimCompletionsAblation(t *testing.T) {
	prefix := make([]int, 400)
	for i := range prefix {
		prefix[i] = 100 + (i*7919)%9900
	}
	for mode, want := range map[sim.PrefixCacheMode]int{sim.PrefixCacheNaive: 6656, sim.PrefixCacheRadix: 656} {
		t.Run(string(mode), func(t *testing.T) {
			s := newSim(t, sim.Options{PrefixCache: mode})
			c := newClient(t, s.VLLMURL, nil)
			prefilled := 0
			for i := range 16 {
				ids := append(append([]int(nil), prefix...), make([]int, 16)...)
				for k := range 16 {
					ids[400+k] = 20000 + 16*i + k
				}
				res, err := c.Complete(context.Background(), engine.Request{Model: s.Model(), Prompt: &engine.Prompt{Tokens: ids},
					MaxTokens: 4, IgnoreEOS: true, Stream: i%2 == 0})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Warnings) != 0 {
					t.Errorf("request %d: warnings %v", i, res.Warnings)
				}
				cached, ok := res.Usage.Cached()
				if !ok || res.Usage.PromptTokens != 416 {
					t.Fatalf("request %d: usage %+v, want 416 prompt tokens and cached_tokens reported", i, res.Usage)
				}
				prefilled += res.Usage.PromptTokens - cached
			}
			if st := s.CacheStats(); prefilled != want || st.PrefilledTokens != int64(want) {
				t.Errorf("the client read %d tokens prefilled, the sim counts %d; want %d", prefilled, st.PrefilledTokens, want)
			}
		})
	}
}

// TestSimCompletionsText: a text prompt streams its text from choices[].text
// with exact per-chunk counts, and Usage.CachedTokens is nil where the
// server says nothing (the chat path with nothing cached, or a sim
// without prompt_tokens_details).
func TestSimCompletionsText(t *testing.T) {
	s := newSim(t, sim.Options{NoPromptTokensDetails: true})
	c := newClient(t, s.VLLMURL, nil)
	ctx := context.Background()
	text := "The quick brown fox jumps over the lazy dog"
	res, err := c.Complete(ctx, engine.Request{Model: s.Model(), Prompt: &engine.Prompt{Text: text}, MaxTokens: 12, IgnoreEOS: true, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage == nil || res.Usage.PromptTokens != sim.CountText(text) || res.Usage.CompletionTokens != 12 || res.Usage.CachedTokens != nil {
		t.Fatalf("usage %+v: want %d prompt tokens, 12 generated, cached_tokens not reported", res.Usage, sim.CountText(text))
	}
	if res.Trace.Tokens() != 12 || len(res.Trace.Chunks) != 12 || sim.CountText(res.Text) != 12 || res.FinishReason != "length" {
		t.Errorf("trace of %d tokens in %d chunks, text %q, finish %q", res.Trace.Tokens(), len(res.Trace.Chunks), res.Text, res.FinishReason)
	}
	if !res.Trace.FirstChunk.IsZero() {
		t.Errorf("a completion stream has no role chunk: want no first-chunk anchor")
	}
	// A prompt of token ids the server counts otherwise gets a warning:
	// here the server is asked for a text prompt while the client claims
	// ids, through Extra.
	res, err = c.Complete(ctx, engine.Request{Model: s.Model(), Prompt: &engine.Prompt{Tokens: []int{1, 2, 3}}, MaxTokens: 2,
		Extra: map[string]any{"prompt": "one two three four five"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !errors.Is(res.Warnings[0], ErrPromptTokens) {
		t.Errorf("warnings %v, want one wrapping ErrPromptTokens", res.Warnings)
	}
	// A request with both a Prompt and Messages, or an empty Prompt, is
	// refused before anything is sent.
	for _, req := range []engine.Request{
		{Model: s.Model(), Prompt: &engine.Prompt{Text: "x"}, Messages: []engine.Message{{Role: "user", Content: "y"}}},
		{Model: s.Model(), Prompt: &engine.Prompt{}},
		{Model: s.Model(), Prompt: &engine.Prompt{Tokens: []int{-1}}},
	} {
		if _, err := c.Complete(ctx, req); engine.KindOf(err) != engine.KindOther {
			t.Errorf("%+v: error %v, want one of kind other", req.Prompt, err)
		}
	}
}
