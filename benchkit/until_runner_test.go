package benchkit

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/precision"
	"github.com/inferbench/inferbench/promptsize"
)

// TestRunnerUntil: a cell with a target repeats past Repeat until the
// target is met (an engine whose every repeat is alike meets it at
// precision.MinSamples repeats), and one whose target MaxRepeat cannot
// reach stops at MaxRepeat; Plan.Summarize says which of each, and the
// results file keeps it.
func TestRunnerUntil(t *testing.T) {
	for _, c := range []struct {
		until   string
		repeats int
		stopped string
	}{
		{"gen_tps.mean:5%", precision.MinSamples, precision.StoppedMet},
		{"gen_tps.p99:5%", 7, precision.StoppedCap}, // 7 repeats cannot bound a p99
	} {
		r := &Runner{Engine: &fakeEngine{}, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter}}
		plan := Plan{PP: []int{40}, TG: []int{8}, Concurrency: []int{1, 2}, Repeat: 2, Stream: true,
			Until: mustTargets(t, c.until), MaxRepeat: 7}
		rep, err := r.Run(context.Background(), plan)
		if err != nil {
			t.Fatal(err)
		}
		if want := 3 * c.repeats; len(rep.Requests) != want {
			t.Errorf("%s: %d requests, want %d (%d repeats of bursts of 1 and 2)", c.until, len(rep.Requests), want, c.repeats)
		}
		cells := plan.Summarize(rep.Requests)
		for _, s := range cells {
			if s.Repeats != c.repeats || s.Stopped != c.stopped || len(s.Precision) != 1 || s.Precision[0].Met != (c.stopped == precision.StoppedMet) {
				t.Errorf("%s %s: %d repeats, stopped %q, precision %+v; want %d, %q", c.until, s.Name(), s.Repeats, s.Stopped, s.Precision, c.repeats, c.stopped)
			}
			if len(s.Warnings) == 0 || !strings.HasPrefix(s.Warnings[0], c.stopped+" after") {
				t.Errorf("%s: notes %q; want the stop first", c.until, s.Warnings)
			}
		}
		b, err := json.Marshal(Document{Runs: rep.Requests, Meta: &Meta{Plan: plan}, Summary: cells})
		if err != nil {
			t.Fatal(err)
		}
		var back Document
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if len(back.Summary) != 2 || back.Summary[0].Stopped != c.stopped || !strings.Contains(string(b), `"stopped":"`+c.stopped+`"`) {
			t.Errorf("%s: the results file's cells say %q; want %q", c.until, back.Summary[0].Stopped, c.stopped)
		}
	}
}

// TestPlanUntilRefused: targets without a cap, an unknown figure or a
// cap without targets are refused before anything is sent.
func TestPlanUntilRefused(t *testing.T) {
	base := Plan{PP: []int{40}, TG: []int{8}, Repeat: 3}
	for _, c := range []struct {
		until string
		max   int
	}{{"gen_tps.mean:5%", 0}, {"gen_tps.mean:5%", 2}, {"tpot.mean:5%", 9}, {"", 9}} {
		p := base
		p.Until, p.MaxRepeat = mustTargets(t, c.until), c.max
		if err := p.Validate(-1); !errors.Is(err, ErrBadPlan) {
			t.Errorf("until %q, max repeat %d: %v, want ErrBadPlan", c.until, c.max, err)
		}
	}
}
