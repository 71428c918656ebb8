package disagg

import (
	"math"

	"github.com/inferbench/inferbench/benchkit"
)

// PhaseFigures are one phase's means over its successful requests of one
// (pp, tg, concurrency) cell. A figure no request had is null.
type PhaseFigures struct {
	Phase string `json:"phase"`
	// Requests counts the successful requests; Failed the others.
	Requests int `json:"requests"`
	Failed   int `json:"failed"`
	// ElapsedS is the mean of elapsed_s (exo's client-side wall time of a
	// request); TTFTS the mean client TTFT (streamed requests only).
	ElapsedS *float64 `json:"elapsed_s"`
	TTFTS    *float64 `json:"ttft_s"`
	// PromptTPS is the mean of the server's prompt_tps; GenerationTPS the
	// mean of the server's generation_tps, else the client's.
	PromptTPS     *float64 `json:"prompt_tps"`
	GenerationTPS *float64 `json:"generation_tps"`
}

// A Speedup compares the disaggregated phase with one baseline; each
// figure is above 1 when the disaggregated setup did better. See
// Compare for the formulas.
type Speedup struct {
	Baseline      string   `json:"baseline"`
	Elapsed       *float64 `json:"elapsed"`
	TTFT          *float64 `json:"ttft"`
	PromptTPS     *float64 `json:"prompt_tps"`
	GenerationTPS *float64 `json:"generation_tps"`
}

// A Comparison is one cell measured in every phase.
type Comparison struct {
	PP          int `json:"pp"`
	TG          int `json:"tg"`
	Concurrency int `json:"concurrency"`
	// Phases are the phases' figures in the order disaggregated,
	// decode_alone, prefill_alone; a phase not run is left out.
	Phases []PhaseFigures `json:"phases"`
	// Speedups compare disaggregated with decode_alone and with
	// prefill_alone, when both phases of a comparison were run.
	Speedups []Speedup `json:"speedups,omitempty"`
}

// Compare groups rows by (pp target, tg, concurrency), in the order
// cells first appear, takes each phase's means over its successful
// requests, and compares the disaggregated phase D with each baseline B
// (decode_alone, prefill_alone):
//
//	elapsed speedup        = mean elapsed_s(B) / mean elapsed_s(D)   (exo's "speedup vs B")
//	TTFT speedup           = mean TTFT(B) / mean TTFT(D)             (streamed requests only)
//	prompt TPS speedup     = mean prompt_tps(D) / mean prompt_tps(B)
//	generation TPS speedup = mean generation_tps(D) / mean generation_tps(B)
//
// so that every speedup is above 1 when the disaggregated setup did
// better. A speedup whose two means are not both defined and positive is
// null. Means are exo's choice for this benchmark (its exo_bench reports
// the max of generation TPS instead).
func Compare(reqs []benchkit.Request) []Comparison {
	type key struct{ pp, tg, conc int }
	var order []key
	byCell := map[key]map[string][]benchkit.Request{}
	for _, r := range reqs {
		k := key{r.PPTarget, r.TGTarget, r.Concurrency}
		if byCell[k] == nil {
			byCell[k] = map[string][]benchkit.Request{}
			order = append(order, k)
		}
		byCell[k][r.Phase] = append(byCell[k][r.Phase], r)
	}
	var out []Comparison
	for _, k := range order {
		c := Comparison{PP: k.pp, TG: k.tg, Concurrency: k.conc}
		figs := map[string]PhaseFigures{}
		for _, ph := range [...]string{PhaseDisaggregated, PhaseDecodeAlone, PhasePrefillAlone} {
			if rs, ok := byCell[k][ph]; ok {
				f := phaseFigures(ph, rs)
				figs[ph] = f
				c.Phases = append(c.Phases, f)
			}
		}
		if dis, ok := figs[PhaseDisaggregated]; ok {
			for _, b := range [...]string{PhaseDecodeAlone, PhasePrefillAlone} {
				if base, ok := figs[b]; ok {
					c.Speedups = append(c.Speedups, Speedup{
						Baseline:      b,
						Elapsed:       ratio(base.ElapsedS, dis.ElapsedS),
						TTFT:          ratio(base.TTFTS, dis.TTFTS),
						PromptTPS:     ratio(dis.PromptTPS, base.PromptTPS),
						GenerationTPS: ratio(dis.GenerationTPS, base.GenerationTPS),
					})
				}
			}
		}
		out = append(out, c)
	}
	return out
}

func phaseFigures(phase string, rows []benchkit.Request) PhaseFigures {
	f := PhaseFigures{Phase: phase}
	var el, ttft, ptps, gtps []float64
	for _, r := range rows {
		if r.Failed() {
			f.Failed++
			continue
		}
		f.Requests++
		el = append(el, r.DoneS)
		if r.TTFTS != nil {
			ttft = append(ttft, *r.TTFTS)
		}
		if r.Stats != nil && r.Stats.PromptTPS > 0 {
			ptps = append(ptps, r.Stats.PromptTPS)
		}
		switch {
		case r.Stats != nil && r.Stats.GenerationTPS > 0:
			gtps = append(gtps, r.Stats.GenerationTPS)
		case r.GenerationTPS != nil:
			gtps = append(gtps, *r.GenerationTPS)
		}
	}
	f.ElapsedS, f.TTFTS, f.PromptTPS, f.GenerationTPS = mean(el), mean(ttft), mean(ptps), mean(gtps)
	return f
}

// mean is the arithmetic mean of xs, nil when xs is empty.
func mean(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return finite(s / float64(len(xs)))
}

// ratio is a / b, nil unless both are defined and positive.
func ratio(a, b *float64) *float64 {
	if a == nil || b == nil || *a <= 0 || *b <= 0 {
		return nil
	}
	return finite(*a / *b)
}

// finite returns a pointer to v, or nil when v is NaN or infinite, for
// JSON fields where an undefined figure is null.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
