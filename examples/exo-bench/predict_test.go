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

// cellMeans are a results file's rows' mean E2E and server generation
// rate per cell (pp, concurrency).
func cellMeans(t *testing.T, path string) (map[[2]int][2]float64, *benchkit.Meta, []benchkit.ExoRun) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc exoDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	sum, n := map[[2]int][2]float64{}, map[[2]int]float64{}
	for _, r := range doc.Runs {
		if failed(r) || r.E2ES == nil || r.Stats == nil {
			t.Fatalf("row %+v: failed or without E2E and server stats", r)
		}
		k := [2]int{r.PPTarget, r.Concurrency}
		s := sum[k]
		sum[k] = [2]float64{s[0] + *r.E2ES, s[1] + r.Stats.GenerationTPS}
		n[k]++
	}
	for k, s := range sum {
		sum[k] = [2]float64{s[0] / n[k], s[1] / n[k]}
	}
	return sum, doc.Meta, doc.Runs
}

// TestPredictCells: --predict computes every cell's bursts: the table says
// predicted, every row is, and each cell's mean E2E and server generation
// rate agree with a live run of the same plan within the live path's own
// time (the release skew, the loopback: a few ms, more on a loaded
// machine and under the race detector).
func TestPredictCells(t *testing.T) {
	plan := []string{"--pp", "64,200", "--tg", "16", "--concurrency", "1,3", "--repeat", "2"}
	pout, perr, pdir, err := runFast(t, append([]string{"--predict"}, plan...)...)
	if err != nil {
		t.Fatalf("predict: %v\nstderr:\n%s", err, perr)
	}
	lout, lerr, ldir, err := runFast(t, plan...)
	if err != nil {
		t.Fatalf("live: %v\nstderr:\n%s", err, lerr)
	}
	t.Logf("predicted:\n%s\nlive:\n%s", pout, lout)
	if !strings.Contains(pout, "PREDICTED") || strings.Contains(lout, "PREDICTED") {
		t.Errorf("want PREDICTED in the prediction's table only")
	}
	pm, pmeta, prows := cellMeans(t, filepath.Join(pdir, "out.json"))
	lm, lmeta, _ := cellMeans(t, filepath.Join(ldir, "out.json"))
	if !pmeta.Predicted || lmeta.Predicted || len(prows) != 16 {
		t.Fatalf("meta predicted %v and %v, %d predicted rows; want true, false and 16", pmeta.Predicted, lmeta.Predicted, len(prows))
	}
	tol := 0.02 // s
	if raceEnabled {
		tol = 0.25
	}
	for k, l := range lm {
		p, ok := pm[k]
		if !ok {
			t.Errorf("cell pp=%d conc=%d not predicted", k[0], k[1])
			continue
		}
		if math.Abs(p[0]-l[0]) > 0.1*l[0]+tol {
			t.Errorf("cell pp=%d conc=%d: mean E2E predicted %.4f s, live %.4f s", k[0], k[1], p[0], l[0])
		}
		if !raceEnabled && math.Abs(p[1]-l[1]) > 0.1*l[1] {
			t.Errorf("cell pp=%d conc=%d: mean generation rate predicted %.1f/s, live %.1f/s", k[0], k[1], p[1], l[1])
		}
	}
}

// TestPredictCellsRefuses: --predict with what it cannot predict is a
// usage error (exit 2) that names it.
func TestPredictCellsRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"--predict", "--host", "127.0.0.1", "--model", "m", "--tokenizer", ".", "--pp", "64", "--tg", "4"},
		{"--predict", "--until", "gen_tps.mean:5%", "--max-repeat", "4"},
		{"--predict", "--use-prefix-cache"},
		{"--predict", "--thinking", "on"},
	} {
		var o, e bytes.Buffer
		err := run(context.Background(), args, &o, &e)
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--predict") || cli.ExitCode(err) != 2 {
			t.Errorf("%v: error %v, want a usage error about --predict (exit 2)", args, err)
		}
	}
}
