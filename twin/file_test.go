package twin_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/twin"
)

func validTwin() twin.Twin {
	return twin.Twin{Version: twin.Version, PrefillChunk: 4096, Base: "fast",
		Coefficients: sim.Coefficients{StepOverhead: 1e-4, DecodeBase: 1e-3, DecodePerRequest: 1e-5, PrefillBase: 1e-3, PrefillPerToken: 2e-6}}
}

// A twin file no engine can run is refused, saying why.
func TestParseRefuses(t *testing.T) {
	good, err := json.Marshal(validTwin())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := twin.Parse(good); err != nil {
		t.Fatalf("a valid twin: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*twin.Twin)
		raw  string
	}{
		{name: "version", edit: func(t *twin.Twin) { t.Version = 9 }},
		{name: "negative", edit: func(t *twin.Twin) { t.Coefficients.PrefillPerPair = -1 }},
		{name: "nan-free decode", edit: func(t *twin.Twin) {
			t.Coefficients.StepOverhead, t.Coefficients.DecodeBase, t.Coefficients.DecodePerRequest = 0, 0, 0
		}},
		{name: "base", edit: func(t *twin.Twin) { t.Base = "no-such-preset" }},
		{name: "max running", edit: func(t *twin.Twin) { t.Coefficients.MaxRunning = -2 }},
		{name: "unknown field", raw: `{"version": 1, "coefficient": {}}`},
		{name: "trailing", raw: string(good) + ` {}`},
		{name: "not json", raw: `twin`},
	} {
		b := []byte(c.raw)
		if c.edit != nil {
			tw := validTwin()
			c.edit(&tw)
			b, _ = json.Marshal(tw)
		}
		if _, err := twin.Parse(b); !errors.Is(err, twin.ErrBadTwin) {
			t.Errorf("%s: %v, want ErrBadTwin", c.name, err)
		}
	}
}

// FuzzParse: Parse never panics, and what it accepts encodes and parses
// back to itself.
func FuzzParse(f *testing.F) {
	good, _ := json.Marshal(validTwin())
	f.Add(good)
	f.Add([]byte(`{"version":1,"coefficients":{"decode_base_s":1e-3,"prefill_per_token_s":1e-6}}`))
	f.Add([]byte(`{"version":1,"coefficients":{"decode_base_s":1e400}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tw, err := twin.Parse(b)
		if err != nil {
			return
		}
		again, err := json.Marshal(tw)
		if err != nil {
			t.Fatalf("an accepted twin does not encode: %v", err)
		}
		back, err := twin.Parse(again)
		if err != nil || back.Coefficients != tw.Coefficients || back.PrefillChunk != tw.PrefillChunk {
			t.Fatalf("re-parsed %+v, %v; want %+v", back.Coefficients, err, tw.Coefficients)
		}
	})
}

// Fit refuses records it cannot fit, and an unknown base preset.
func TestFitRefuses(t *testing.T) {
	if _, err := twin.Fit(nil, twin.FitOptions{}); !errors.Is(err, twin.ErrNoData) {
		t.Errorf("no rows: %v, want ErrNoData", err)
	}
	if _, err := twin.Fit(nil, twin.FitOptions{Base: "nope"}); err == nil {
		t.Error("an unknown base preset was accepted")
	}
}

func f64(x float64) *float64 { return &x }

// rowsOf makes one run's rows with the given TTFT and decode step.
func rowsOf(run int, ttft, tpot float64) []benchkit.Request {
	var out []benchkit.Request
	n := 10
	for i := range 4 {
		off := float64(i) * 0.5
		e2e := ttft + float64(n-1)*tpot
		out = append(out, benchkit.Request{Labels: benchkit.Labels{Run: run}, Index: i, PPTarget: 64, PPTokens: 64, TGTarget: n,
			CompletionTokens: &n, SendOffsetS: off, IntendedSendS: off, DoneS: off + e2e,
			TTFTS: f64(ttft), TPOTS: f64(tpot), E2ES: f64(e2e), Stream: true})
	}
	return out
}

// Compare: a twin 10 % slower on every latency of every run has a MAPE
// of 10 % and a positive bias on each, and a Pearson r of 1 over runs
// whose figures vary together; runs only one side has are left out.
func TestCompare(t *testing.T) {
	var pred, meas []benchkit.Request
	for run, x := range []float64{0.01, 0.02, 0.05} {
		meas = append(meas, rowsOf(run, x, x/10)...)
		pred = append(pred, rowsOf(run, 1.1*x, 1.1*x/10)...)
	}
	meas = append(meas, rowsOf(7, 0.3, 0.03)...)
	f := twin.Compare(pred, meas)
	if f.Runs != 3 {
		t.Errorf("runs = %d, want the 3 both sides have", f.Runs)
	}
	seen := 0
	for _, m := range f.Metrics {
		if m.Metric != "ttft_mean" && m.Metric != "e2e_p90" && m.Metric != "tpot_p50" {
			continue
		}
		seen++
		if math.Abs(m.MAPE-10) > 1e-6 || math.Abs(m.Bias-10) > 1e-6 || m.BiasSign != "over" || m.N != 3 {
			t.Errorf("%s: %+v, want MAPE 10 %%, bias +10 %% over 3 runs", m.Metric, m)
		}
		if m.Pearson == nil || math.Abs(*m.Pearson-1) > 1e-9 {
			t.Errorf("%s: Pearson %v, want 1", m.Metric, m.Pearson)
		}
	}
	if seen != 3 {
		t.Errorf("found %d of the 3 metrics looked for in %+v", seen, f.Metrics)
	}
}

// Ollama's runner samples a prompt's first token in its last batch, in
// slots, as llama-server does: records with Ollama's timings fit a twin
// of the llama.cpp profile in Ollama's 512-token batches, whose client
// TTFT is the overhead plus the prefill with no decode step of its own.
func TestFitOllamaRecords(t *testing.T) {
	const (
		over, perTok, step, client = 0.001, 50e-6, 0.002, 0.03
		n                          = 16
	)
	var rows []benchkit.Request
	for i, p := range []int{64, 128, 256, 384, 512, 64, 128, 256, 384, 512} {
		prefill := time.Duration((over + perTok*float64(p)) * float64(time.Second))
		decode := time.Duration(float64(n-1) * step * float64(time.Second))
		ttft := client + prefill.Seconds()
		c := n
		rows = append(rows, benchkit.Request{Labels: benchkit.Labels{Run: i % 5, Concurrency: 1, Repeat: i / 5}, PPTarget: p, PPTokens: p,
			ServerPromptTokens: &c, TGTarget: n, CompletionTokens: &c, Stream: true, TTFTS: f64(ttft), E2ES: f64(ttft + decode.Seconds()),
			Stats: &engine.ServerStats{Source: "ollama", PromptTokens: p, GenerationTokens: n, Prefill: &prefill, Decode: &decode}})
		rows[len(rows)-1].ServerPromptTokens = &rows[len(rows)-1].PPTokens
	}
	tw, err := twin.Fit(rows, twin.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tw.Profile != twin.ProfileLlamaCpp || tw.PrefillChunk != twin.OllamaBatch {
		t.Errorf("profile %q, chunk %d: want %q in Ollama's batches of %d", tw.Profile, tw.PrefillChunk, twin.ProfileLlamaCpp, twin.OllamaBatch)
	}
	// With a decode step in the TTFT, the client's overhead would come
	// out one step (2 ms) short.
	if d := tw.ClientOverheadS - client; math.Abs(d) > 1e-4 {
		t.Errorf("client overhead %.4g s, want %.4g s", tw.ClientOverheadS, client)
	}
	if o := tw.Options(); o.Profile != sim.LlamaCpp || o.LlamaCpp.Batch != twin.OllamaBatch ||
		o.RequestOverhead != time.Duration(tw.ClientOverheadS*float64(time.Second)) {
		t.Errorf("options: profile %v, batch %d, request overhead %v: want the llama.cpp profile, Ollama's batch, the client overhead",
			o.Profile, o.LlamaCpp.Batch, o.RequestOverhead)
	}
}

// A twin of Ollama's runner serves its slots' batch (PrefillChunk tokens
// of each slot's prompt a step) as the engine's batch; a negative one is
// refused.
func TestTwinBatch(t *testing.T) {
	tw := validTwin()
	tw.Profile, tw.PrefillChunk, tw.Coefficients.MaxRunning = twin.ProfileLlamaCpp, 512, 4
	if got := tw.Options().LlamaCpp.Batch; got != 512 {
		t.Errorf("no batch: the engine's batch is %d, want the chunk 512", got)
	}
	tw.Batch = 2048
	if got := tw.Options().LlamaCpp.Batch; got != 2048 {
		t.Errorf("batch 2048: the engine's batch is %d", got)
	}
	tw.Batch = -1
	if err := tw.Check(); !errors.Is(err, twin.ErrBadTwin) {
		t.Errorf("batch -1: %v, want ErrBadTwin", err)
	}
	tw.Batch, tw.OverheadSlots = 0, 2
	if o := tw.Options(); o.RequestOverheadSlots != 2 {
		t.Errorf("overhead slots 2: the engine's are %d", o.RequestOverheadSlots)
	}
	tw.OverheadSlots = -1
	if err := tw.Check(); !errors.Is(err, twin.ErrBadTwin) {
		t.Errorf("overhead slots -1: %v, want ErrBadTwin", err)
	}
}
