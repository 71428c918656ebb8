package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/twin"
)

// TestPredictFlag: --predict computes a two-rate sweep of 600 requests
// whose schedule spans about 15 s in a small part of that, labels the
// table and every row predicted, and writes no figure of a client.
func TestPredictFlag(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err := run(context.Background(), []string{"--predict", "--rate", "30,200", "--num-requests", "300", "--input-len", "300",
		"--output-len", "32", "--range-ratio", "0.5", "--seed", "1", "--json-out", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v; stderr:\n%s", err, stderr.String())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the prediction of a 15 s schedule took %v", d)
	}
	if !strings.Contains(stdout.String(), "PREDICTED") || !strings.Contains(stdout.String(), "300/300") {
		t.Errorf("stdout lacks the PREDICTED label or 300/300 requests:\n%s", stdout.String())
	}
	doc := readDoc(t, out)
	if !doc.Meta.Predicted || len(doc.Runs) != 2 {
		t.Fatalf("meta predicted %v, %d runs; want true and 2", doc.Meta.Predicted, len(doc.Runs))
	}
	for k, r := range doc.Runs {
		for _, row := range r.Requests {
			if !row.Predicted || row.Run != k || row.TTFTS == nil {
				t.Fatalf("run %d: row %+v: want predicted, run %d, a TTFT", k, row, k)
			}
		}
	}
	if lo, hi := *doc.Runs[0].Summary.TTFT.P90, *doc.Runs[1].Summary.TTFT.P90; hi <= lo {
		t.Errorf("TTFT p90 %.4f s at 200/s, %.4f s at 30/s: the higher rate should queue", hi, lo)
	}
}

// TestPredictRepliedLoops: --predict computes a closed loop (--users)
// and a capped open loop (--max-concurrency), whose requests wait on
// replies, on the virtual clock: a closed loop of 2 users has 2 requests
// in flight, and a cap of 2 at a rate the engine does not keep up with
// holds requests back (their lag grows) where the uncapped run sends
// each at its instant.
func TestPredictRepliedLoops(t *testing.T) {
	base := []string{"--predict", "--num-requests", "40", "--input-len", "200", "--output-len", "32", "--seed", "1"}
	for name, c := range map[string]struct {
		args    []string
		lagging bool
	}{
		"closed":   {args: []string{"--users", "2", "--think", "5ms"}},
		"capped":   {args: []string{"--rate", "200", "--max-concurrency", "2"}, lagging: true},
		"uncapped": {args: []string{"--rate", "200"}},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), append(append(base, c.args...), "--json-out", out), &stdout, &stderr); err != nil {
				t.Fatalf("run: %v; stderr:\n%s", err, stderr.String())
			}
			if !strings.Contains(stdout.String(), "PREDICTED") || !strings.Contains(stdout.String(), "40/40") {
				t.Errorf("stdout lacks the PREDICTED label or 40/40 requests:\n%s", stdout.String())
			}
			doc := readDoc(t, out)
			if !doc.Meta.Predicted || doc.Summary == nil || len(doc.Requests) != 40 {
				t.Fatalf("meta predicted %v, summary %v, %d rows; want a predicted run of 40", doc.Meta.Predicted, doc.Summary != nil, len(doc.Requests))
			}
			var lag float64
			for _, r := range doc.Requests {
				lag = max(lag, r.SendOffsetS-r.IntendedSendS)
			}
			switch {
			case c.lagging && lag < 0.05:
				t.Errorf("largest lag %.4f s: the cap should hold requests back", lag)
			case !c.lagging && lag != 0:
				t.Errorf("largest lag %.4f s: want each request sent when it was meant", lag)
			}
			if name != "uncapped" && doc.Summary.PeakInFlight != 2 {
				t.Errorf("peak in flight %d, want 2", doc.Summary.PeakInFlight)
			}
		})
	}
}

// TestPredictFindMaxRate: --predict --find-max-rate runs the search for
// the highest rate meeting the SLO on the virtual clock: the document
// holds the result beside its predicted runs, the table is labelled
// predicted, and the result is the search's bracket: the run at the rate
// found meets the SLO at the attainment, the run at the next probe up
// does not.
func TestPredictFindMaxRate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--predict", "--find-max-rate", "--slo-e2e", "150", "--search-start", "16", "--num-requests", "60",
		"--input-len", "512", "--output-len", "64", "--seed", "1", "--json-out", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v; stderr:\n%s", err, stderr.String())
	}
	for _, s := range []string{"PREDICTED", "search for the highest rate", "highest rate meeting e2e≤150ms"} {
		if !strings.Contains(stdout.String(), s) {
			t.Errorf("stdout lacks %q:\n%s", s, stdout.String())
		}
	}
	doc := readDoc(t, out)
	mr := doc.MaxRate
	if !doc.Meta.Predicted || mr == nil || mr.Probes != len(doc.Runs) || mr.RateRPS <= 0 || mr.Hi <= mr.RateRPS {
		t.Fatalf("meta predicted %v, max rate %+v, %d runs; want a predicted search with a bracket", doc.Meta.Predicted, mr, len(doc.Runs))
	}
	found := map[float64]bool{}
	for _, r := range doc.Runs {
		if len(r.Requests) == 0 || !r.Requests[0].Predicted || r.Summary.RequestRate == nil {
			t.Fatalf("run %+v: want predicted rows at a rate", r.Summary)
		}
		rate := *r.Summary.RequestRate
		switch rate {
		case mr.RateRPS, mr.Hi:
			found[rate] = true
			if meets := r.Summary.Meets(mr.Attainment); meets != (rate == mr.RateRPS) {
				t.Errorf("the run at %.4g/s meets the SLO: %v (the search found %.4g/s, next up %.4g/s)", rate, meets, mr.RateRPS, mr.Hi)
			}
		}
	}
	if len(found) != 2 {
		t.Errorf("the runs at %.4g/s and %.4g/s are not both in the document", mr.RateRPS, mr.Hi)
	}
}

// TestPredictFlagRefuses: --predict with what it cannot predict is a
// usage error.
func TestPredictFlagRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"--predict", "--base-url", "http://127.0.0.1:1"},
		{"--predict", "--sim-profile", "llamacpp"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, &stderr)
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--predict") {
			t.Errorf("%v: error %v, want a usage error about --predict", args, err)
		}
	}
}

// TestPredictFindCapacity: --predict --find-capacity with a twin file
// runs the capacity search on the virtual clock: a search of 15 s of
// schedules in a fraction of it, the table's capacity lines labelled
// predicted, the document's capacity result beside its predicted runs,
// and a knee bracket holding the rate the twin's cost model serves.
func TestPredictFindCapacity(t *testing.T) {
	// A twin whose decode step of a batch of 4 takes 10 ms plus 0.1 ms a
	// request: at saturation each request of 16 tokens costs its prefill
	// (2 ms + 64 × 10 µs) plus 16 steps shared by 4.
	c := sim.Coefficients{DecodeBase: 0.010, DecodePerRequest: 1e-4, PrefillBase: 0.002, PrefillPerToken: 1e-5, MaxRunning: 4}
	tw := twin.Twin{Version: twin.Version, PrefillChunk: 512, Base: "fast", Server: twin.Server{Model: "m"}, Coefficients: c}
	dir := t.TempDir()
	path, out := filepath.Join(dir, "twin.json"), filepath.Join(dir, "r.json")
	if err := tw.Save(path); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err := run(context.Background(), []string{"--predict", "--find-capacity", "--sim-preset", path, "--num-requests", "0", "--duration", "2.5s",
		"--burstiness", "20", "--input-len", "64", "--output-len", "16", "--search-start", "8", "--capacity-runs", "6", "--capacity-tolerance", "0.15",
		"--slo-e2e", "1000", "--seed", "1", "--json-out", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v; stderr:\n%s", err, stderr.String())
	}
	t.Logf("%v of wall time:\n%s", time.Since(start), stdout.String())
	for _, s := range []string{"PREDICTED", "capacity search over", "predicted knee", "predicted capacity at e2e≤1s"} {
		if !strings.Contains(stdout.String(), s) {
			t.Errorf("stdout lacks %q", s)
		}
	}
	doc := readDoc(t, out)
	if !doc.Meta.Predicted || doc.Capacity == nil || doc.Capacity.Runs != len(doc.Runs) || len(doc.Runs) < 4 {
		t.Fatalf("meta predicted %v, capacity %v, %d runs; want a predicted search of at least 4 runs", doc.Meta.Predicted, doc.Capacity != nil, len(doc.Runs))
	}
	for k, r := range doc.Runs {
		if len(r.Requests) == 0 || !r.Requests[0].Predicted || r.Requests[0].Run != k {
			t.Fatalf("run %d: want predicted rows numbered %d", k, k)
		}
	}
	// The service rate at a full batch of 4, from the coefficients (the
	// prompt as the server counts it is a few tokens either side of 64:
	// nothing at this precision).
	per := c.PrefillBase + 63*c.PrefillPerToken + 16*(c.DecodeBase+4*c.DecodePerRequest)/4
	if mu, k := 1/per, doc.Capacity.Knee; !k.Bracketed() || k.Lo > mu*1.05 || k.Hi < mu*0.95 {
		t.Errorf("predicted knee %s does not hold the twin's service rate %.4g/s", k, mu)
	}
}

// TestPredictRefusesLlamaCppTwin: a twin file of llama-server schedules
// as its slots, which the prediction does not model: a usage error.
func TestPredictRefusesLlamaCppTwin(t *testing.T) {
	tw := twin.Twin{Version: twin.Version, PrefillChunk: 512, Profile: twin.ProfileLlamaCpp,
		Coefficients: sim.Coefficients{DecodeBase: 1e-3, PrefillBase: 1e-3, MaxRunning: 2}}
	path := filepath.Join(t.TempDir(), "twin.json")
	if err := tw.Save(path); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"--predict", "--sim-preset", path, "--rate", "5"}, &bytes.Buffer{}, &bytes.Buffer{})
	var ue *cli.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "llama-server") {
		t.Errorf("error %v, want a usage error about a twin of llama-server", err)
	}
}

// TestPredictSharedPrefixFlag: --predict --shared-prefix 128 predicts
// prompts that open with the same 128 tokens, which the engine's prefix
// cache serves: every request after the first (at 10/s, each after the
// last has ended) finds at least the shared tokens' whole blocks cached,
// and the same plan without the flag finds none.
func TestPredictSharedPrefixFlag(t *testing.T) {
	base := []string{"--predict", "--rate", "10", "--num-requests", "12", "--input-len", "200", "--output-len", "8", "--seed", "1"}
	for _, shared := range []int{0, 128} {
		out := filepath.Join(t.TempDir(), "r.json")
		args := append(slices.Clone(base), "--json-out", out)
		if shared > 0 {
			args = append(args, "--shared-prefix", fmt.Sprint(shared))
		}
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stderr); err != nil {
			t.Fatalf("shared prefix %d: run: %v; stderr:\n%s", shared, err, stderr.String())
		}
		doc := readDoc(t, out)
		if !doc.Meta.Predicted || len(doc.Requests) != 12 {
			t.Fatalf("shared prefix %d: meta predicted %v, %d rows: want one predicted run of 12 rows", shared, doc.Meta.Predicted, len(doc.Requests))
		}
		rows := slices.Clone(doc.Requests)
		slices.SortFunc(rows, func(a, b benchkit.Request) int { return cmp.Compare(a.IntendedSendS, b.IntendedSendS) })
		for k, r := range rows {
			c := 0
			if r.CachedTokens != nil {
				c = *r.CachedTokens
			}
			switch {
			case !r.Predicted:
				t.Errorf("shared prefix %d: request %d is not marked predicted", shared, r.Index)
			case (shared == 0 || k == 0) && c != 0:
				t.Errorf("shared prefix %d: request %d (sent %d-th) found %d cached tokens, want none", shared, r.Index, k+1, c)
			case shared > 0 && k > 0 && c < shared-16:
				t.Errorf("shared prefix %d: request %d found %d cached tokens, want the shared prefix's blocks (at least %d)", shared, r.Index, c, shared-16)
			}
		}
	}
}

// TestPredictProbesFlag: --predict --probe-rate predicts the probes beside
// the load: the probes' line under the table, and the results' probes
// apart from the requests, each a predicted one-token probe.
func TestPredictProbesFlag(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run.json")
	var stdout, stderr bytes.Buffer
	args := []string{"--predict", "--rate", "60", "--num-requests", "40", "--pp", "64", "--tg", "8", "--probe-rate", "20", "--seed", "2", "--json-out", out}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if s := stdout.String(); !strings.Contains(s, "head-of-line probes beside") || !strings.Contains(s, "PREDICTED") {
		t.Errorf("stdout lacks the probes' line or the predicted label:\n%s", s)
	}
	doc := readDoc(t, out)
	s := doc.Summary
	if s == nil || s.Probes == nil || len(doc.Probes) == 0 || s.Probes.Requests != len(doc.Probes) || s.Requests != len(doc.Requests) {
		t.Fatalf("summary %+v, %d probes, %d requests: want the probes apart", s, len(doc.Probes), len(doc.Requests))
	}
	for _, p := range doc.Probes {
		if !p.Probe || !p.Predicted || p.TGTarget != 1 {
			t.Errorf("probe %d: %+v", p.Index, p)
		}
	}
}
