package benchkit

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/precision"
)

// A Plan says what to measure. Its zero value is not runnable (it has no
// lengths); Validate says what is missing.
type Plan struct {
	// PP are the prompt lengths to measure, in tokens of the whole
	// chat-templated request.
	PP []int `json:"pp"`
	// TG are the generation lengths, in tokens (max_tokens of a bench
	// request, which bans EOS so exactly TG come back).
	TG []int `json:"tg"`
	// AllCombinations pairs every pp with every tg. Without it, lists of
	// equal length are paired in order (pp[i] with tg[i]) and lists of
	// different length are combined, as exo's benchmark does.
	AllCombinations bool `json:"all_combinations,omitempty"`
	// Concurrency lists the burst sizes; nil means {1}.
	Concurrency []int `json:"concurrency,omitempty"`
	// Repeat is how many times each cell is measured; 0 means 1. With
	// Until it is the fewest.
	Repeat int `json:"repeat,omitempty"`
	// Until, when set, are target margins of error on a cell's
	// per-repeat figures (precision.Target, as "gen_tps.mean:5%"; the
	// figures gen_tps, prompt_tps, agg_tps, throughput, ttft, ttfa,
	// prefill, e2e, j_per_token and server_j_per_token): each cell
	// repeats, Repeat times at least, until every target is met or it has
	// MaxRepeat repeats. Plan.Summarize says which, per cell. See
	// docs/PRECISION.md.
	Until []precision.Target `json:"until,omitempty"`
	// MaxRepeat caps the repeats of a cell with targets; it is required
	// with Until (at least Repeat and 2).
	MaxRepeat int `json:"max_repeat,omitempty"`
	// Warmup requests are sent before the measurements with the first pp
	// and tg, one at a time, and their results discarded.
	Warmup int `json:"warmup,omitempty"`
	// PauseBetweenRepeats is slept before every measured request or
	// burst, and PauseBetweenGroups after each (pp, tg, concurrency)
	// group. See ExoPauseBetweenRepeats.
	PauseBetweenRepeats time.Duration `json:"pause_between_repeats_ns,omitempty"`
	PauseBetweenGroups  time.Duration `json:"pause_between_groups_ns,omitempty"`
	// UsePrefixCache lets the engine reuse cached prefixes (exo's
	// use_prefix_cache). Prompt TPS then counts cached tokens as if they
	// had been processed, so it is approximate.
	UsePrefixCache bool `json:"use_prefix_cache,omitempty"`
	// Stream asks for streamed responses, so the client measures TTFT,
	// TPOT and ITL itself.
	Stream bool `json:"stream,omitempty"`
	// Salt gives every request a short unique prefix, counted in its
	// exact length, so concurrent requests share no prefix an engine
	// could cache on its own.
	Salt bool `json:"salt,omitempty"`
	// Thinking, when set, are thinking settings each cell is measured
	// under, one after the other (its repeats under the first, then
	// under the next), each as every request's Thinking in place of
	// Runner.Request's; the rows and cells are labelled with it. The
	// warmup takes the first.
	Thinking []engine.Thinking `json:"-"`
}

// A Cell is one (pp, tg, concurrency) combination of a Plan.
type Cell struct {
	PP, TG, Concurrency int
}

// String formats c as "pp=512/tg=128/conc=8", the benchfmt name form.
func (c Cell) String() string {
	return fmt.Sprintf("pp=%d/tg=%d/conc=%d", c.PP, c.TG, c.Concurrency)
}

// Pairs returns the (pp, tg) pairs the plan measures, in order: in tandem
// when the lists have equal length and AllCombinations is off, every
// combination (pp outer, tg inner) otherwise.
func (p Plan) Pairs() [][2]int {
	var out [][2]int
	if !p.AllCombinations && len(p.PP) == len(p.TG) {
		for i := range p.PP {
			out = append(out, [2]int{p.PP[i], p.TG[i]})
		}
		return out
	}
	for _, pp := range p.PP {
		for _, tg := range p.TG {
			out = append(out, [2]int{pp, tg})
		}
	}
	return out
}

// Cells returns every cell of the plan in the order they are measured:
// for each (pp, tg) pair, each concurrency.
func (p Plan) Cells() []Cell {
	var out []Cell
	for _, pr := range p.Pairs() {
		for _, c := range p.concurrency() {
			out = append(out, Cell{PP: pr[0], TG: pr[1], Concurrency: c})
		}
	}
	return out
}

func (p Plan) concurrency() []int {
	if len(p.Concurrency) == 0 {
		return []int{1}
	}
	return p.Concurrency
}

func (p Plan) repeat() int {
	if p.Repeat == 0 {
		return 1
	}
	return p.Repeat
}

// Validate checks the plan before anything is sent. overhead is the chat
// template's overhead in tokens (the count of a request with empty
// content), or a negative number when unknown; no pp may be below it.
// Each error wraps ErrBadPlan and names the value at fault.
func (p Plan) Validate(overhead int) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadPlan}, args...)...))
	}
	if len(p.PP) == 0 {
		bad("no prompt lengths (pp) given")
	}
	if len(p.TG) == 0 {
		bad("no generation lengths (tg) given")
	}
	for _, pp := range p.PP {
		switch {
		case pp < 1:
			bad("pp=%d: prompt length must be at least 1", pp)
		case overhead >= 0 && pp < overhead:
			bad("pp=%d is below the chat template's overhead of %d tokens", pp, overhead)
		}
	}
	for _, tg := range p.TG {
		if tg < 1 {
			bad("tg=%d: generation length must be at least 1", tg)
		}
	}
	for _, c := range p.Concurrency {
		if c < 1 {
			bad("concurrency=%d: must be at least 1", c)
		}
	}
	if p.Repeat < 0 {
		bad("repeat=%d: must be at least 1", p.Repeat)
	}
	p.checkUntil(bad)
	if p.Warmup < 0 {
		bad("warmup=%d: must be 0 or more", p.Warmup)
	}
	if p.PauseBetweenRepeats < 0 || p.PauseBetweenGroups < 0 {
		bad("pauses must not be negative (%v between repeats, %v between groups)", p.PauseBetweenRepeats, p.PauseBetweenGroups)
	}
	return errors.Join(errs...)
}

// Warnings returns exo's two cautions about a valid plan: with the prefix
// cache on, prompt TPS is approximate; and with it on and pp not ascending,
// a later shorter prompt is an exact hit of an earlier longer one.
func (p Plan) Warnings() []error {
	var w []error
	if slices.Contains(p.TG, 1) {
		w = append(w, errors.New("benchkit: "+tg1Note))
	}
	if p.UsePrefixCache {
		w = append(w, errors.New("benchkit: use_prefix_cache is on: prompt TPS counts cached tokens as processed and is approximate"))
		if !slices.IsSorted(p.PP) {
			w = append(w, fmt.Errorf("benchkit: use_prefix_cache is on and pp %v is not ascending: later prompts hit the cache of earlier longer ones", p.PP))
		}
	}
	return w
}

// Requests is how many requests the plan measures (warmups excluded): for
// each cell, its concurrency times the repeats, under each thinking
// setting; with targets (Until), the most it may measure (MaxRepeat
// repeats).
func (p Plan) Requests() int {
	n := 0
	for _, c := range p.Cells() {
		n += c.Concurrency * p.maxRepeat()
	}
	return n * max(1, len(p.Thinking))
}
