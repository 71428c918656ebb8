package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
)

func readLoadDoc(t *testing.T, path string) benchkit.LoadDocument {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := newLoadDocument()
	if err := json.Unmarshal(b, &doc); err != nil || doc.Summary == nil {
		t.Fatalf("results %s: %v", path, err)
	}
	return doc
}

// TestPredictBurst: --predict computes the burst that a run sends: the
// output says predicted, every row is, and the tokens, the burst's length
// and its latencies agree with a live run of the same seed within the
// live path's own time (a few ms on the loopback, more on a loaded
// machine). With --shared-prefix, the burst's cached prompt tokens are
// the live run's: every request but the first to reach the engine finds
// the prefix (which one that is, live, is the network's choice).
func TestPredictBurst(t *testing.T) {
	args := []string{"--num-seqs", "16", "--min-input-len", "100", "--max-input-len", "400", "--min-output-len", "16", "--max-output-len", "64", "--seed", "3"}
	t.Run("plain", func(t *testing.T) { predictBurst(t, args) })
	t.Run("shared prefix", func(t *testing.T) {
		p, l := predictBurst(t, append([]string{"--shared-prefix", "64"}, args...))
		if pc, lc := p.Summary.CachedTokens, l.Summary.CachedTokens; pc != lc || pc == 0 {
			t.Errorf("cached prompt tokens: %v predicted, %v live; want the same, and some", pc, lc)
		}
	})
}

// predictBurst runs args predicted and live and checks that they agree;
// it returns both documents.
func predictBurst(t *testing.T, args []string) (p, l benchkit.LoadDocument) {
	dir := t.TempDir()
	var pout, lout, stderr bytes.Buffer
	if err := run(context.Background(), append([]string{"--predict", "--json-out", filepath.Join(dir, "p.json")}, args...), &pout, &stderr); err != nil {
		t.Fatalf("predict: %v; stderr:\n%s", err, stderr.String())
	}
	if err := run(context.Background(), append([]string{"--json-out", filepath.Join(dir, "l.json")}, args...), &lout, &stderr); err != nil {
		t.Fatalf("live: %v; stderr:\n%s", err, stderr.String())
	}
	t.Logf("predicted:\n%slive:\n%s", pout.String(), lout.String())
	if !strings.Contains(pout.String(), "PREDICTED") || strings.Contains(lout.String(), "PREDICTED") {
		t.Errorf("want PREDICTED in the prediction's output only")
	}
	p, l = readLoadDoc(t, filepath.Join(dir, "p.json")), readLoadDoc(t, filepath.Join(dir, "l.json"))
	if !p.Meta.Predicted || l.Meta.Predicted {
		t.Errorf("meta predicted %v and %v, want true and false", p.Meta.Predicted, l.Meta.Predicted)
	}
	for _, r := range p.Requests {
		if !r.Predicted {
			t.Fatalf("row %d is not marked predicted", r.Index)
		}
	}
	ps, ls := *p.Summary, *l.Summary
	if ps.Requests != 16 || ps.Failed != 0 || ps.TotalOutputTokens != ls.TotalOutputTokens || ps.TotalInputTokens != ls.TotalInputTokens {
		t.Errorf("predicted %d requests (%d failed), %d out and %d in tokens; live %d out and %d in",
			ps.Requests, ps.Failed, ps.TotalOutputTokens, ps.TotalInputTokens, ls.TotalOutputTokens, ls.TotalInputTokens)
	}
	// The live path's own time: a few ms, 20 ms on a machine busy with
	// other tests, and more under the race detector.
	tol := 0.02
	if raceEnabled {
		tol = 0.25
	}
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > 0.1*want+tol {
			t.Errorf("%s: predicted %.4f s, live %.4f s", name, got, want)
		}
	}
	near("burst duration", ps.DurationS, ls.DurationS)
	near("E2E p50", *ps.E2E.P50, *ls.E2E.P50)
	near("E2E p90", *ps.E2E.P90, *ls.E2E.P90)
	return p, l
}

// TestPredictBurstRefuses: --predict with what it cannot predict is a
// usage error (exit 2) that names it.
func TestPredictBurstRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"--predict", "--base-url", "http://127.0.0.1:1"},
		{"--predict", "--sim-profile", "llamacpp"},
		{"--predict", "--seed", "1", "--segment", "0/2"},
		{"--predict", "--thinking", "on"},
	} {
		err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{})
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--predict") {
			t.Errorf("%v: error %v, want a usage error about --predict", args, err)
		}
	}
}
