package benchkit

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/inferbench/inferbench/timing"
)

// TestRecordEnergyEqualsRows writes the fixture's results file and checks
// each summary record's server energy, server J/token, server prefill time
// and client short-window fields against what the file's own rows give,
// recomputed from the decoded JSON: per repeat, the server energy of the
// burst's longest request (power_usage.elapsed_seconds), over the
// repeat's generated tokens; the flag set when any row of the cell has
// energy_window_short, with the shortest such window.
func TestRecordEnergyEqualsRows(t *testing.T) {
	rows := fixtureRows()
	d := Document{Runs: rows, Summary: Summarize(rows, ByCell, timing.SLO{})}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, d); err != nil {
		t.Fatal(err)
	}
	var file struct {
		Runs []struct {
			Concurrency     int  `json:"concurrency"`
			Repeat          int  `json:"repeat_index"`
			GeneratedTokens *int `json:"generated_tokens"`
			Error           string
			Stats           *struct {
				PromptTPS    float64 `json:"prompt_tps"`
				PromptTokens float64 `json:"prompt_tokens"`
			} `json:"stats"`
			PowerUsage *struct {
				ElapsedSeconds    float64 `json:"elapsed_seconds"`
				TotalEnergyJoules float64 `json:"total_energy_joules"`
			} `json:"power_usage"`
			Energy *struct {
				WindowS         float64 `json:"window_s"`
				SampleIntervalS float64 `json:"sample_interval_s"`
			} `json:"energy"`
			EnergyWindowShort bool `json:"energy_window_short"`
		} `json:"runs"`
		Summary []map[string]json.RawMessage `json:"summary"`
	}
	if err := json.Unmarshal(buf.Bytes(), &file); err != nil {
		t.Fatal(err)
	}
	type iv struct {
		Center *float64 `json:"center"`
		N      int      `json:"n"`
	}
	field := func(rec map[string]json.RawMessage, name string, v any) {
		t.Helper()
		raw, ok := rec[name]
		if !ok {
			t.Fatalf("summary record has no %q: %v", name, rec)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatal(err)
		}
	}
	sawServer, sawShort := false, false
	for _, rec := range file.Summary {
		var conc int
		field(rec, "concurrency", &conc)
		// Per repeat: the longest request's server energy, the tokens,
		// the mean prefill time.
		type rep struct {
			longest, joules float64
			tokens          int
			prefill         []float64
		}
		reps := map[int]*rep{}
		short, shortest, interval := false, math.Inf(1), 0.0
		for _, r := range file.Runs {
			if r.Concurrency != conc {
				continue
			}
			x := reps[r.Repeat]
			if x == nil {
				x = &rep{longest: -1, joules: math.NaN()}
				reps[r.Repeat] = x
			}
			if r.Error != "" {
				continue
			}
			if r.GeneratedTokens != nil {
				x.tokens += *r.GeneratedTokens
			}
			if pu := r.PowerUsage; pu != nil && pu.ElapsedSeconds > x.longest {
				x.longest, x.joules = pu.ElapsedSeconds, pu.TotalEnergyJoules
			}
			if r.Stats != nil && r.Stats.PromptTPS > 0 {
				x.prefill = append(x.prefill, r.Stats.PromptTokens/r.Stats.PromptTPS)
			}
			if r.EnergyWindowShort {
				short = true
				shortest, interval = min(shortest, r.Energy.WindowS), r.Energy.SampleIntervalS
			}
		}
		var sj, sjpt, pre []float64
		for _, x := range reps {
			if !math.IsNaN(x.joules) {
				sj = append(sj, x.joules)
				sjpt = append(sjpt, x.joules/float64(x.tokens))
			}
			m := 0.0
			for _, p := range x.prefill {
				m += p / float64(len(x.prefill))
			}
			pre = append(pre, m)
		}
		check := func(name string, want []float64) {
			t.Helper()
			var got iv
			field(rec, name, &got)
			if got.N != len(want) {
				t.Errorf("conc %d: %s n = %d, want %d", conc, name, got.N, len(want))
				return
			}
			if len(want) == 0 {
				if got.Center != nil {
					t.Errorf("conc %d: %s center %v, want null", conc, name, *got.Center)
				}
				return
			}
			mean := 0.0
			for _, v := range want {
				mean += v / float64(len(want))
			}
			if got.Center == nil || math.Abs(*got.Center-mean) > 1e-12*max(1, mean) {
				t.Errorf("conc %d: %s center %v, want %v", conc, name, got.Center, mean)
			}
		}
		check("server_energy_j", sj)
		check("server_j_per_token", sjpt)
		check("server_prefill_s", pre)
		sawServer = sawServer || len(sj) > 0

		var gotShort bool
		var gotWindow, gotInterval float64
		if _, ok := rec["client_energy_window_short"]; ok {
			field(rec, "client_energy_window_short", &gotShort)
			field(rec, "client_energy_short_window_s", &gotWindow)
			field(rec, "client_energy_sample_interval_s", &gotInterval)
		}
		if gotShort != short || (short && (gotWindow != shortest || gotInterval != interval)) {
			t.Errorf("conc %d: short %v, window %v s, interval %v s; the rows give %v, %v s, %v s",
				conc, gotShort, gotWindow, gotInterval, short, shortest, interval)
		}
		sawShort = sawShort || short
	}
	if !sawServer || !sawShort {
		t.Errorf("the fixture exercised server energy %v and a short window %v; want both", sawServer, sawShort)
	}
}
