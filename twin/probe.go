package twin

import (
	"context"
	"fmt"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// ProbeOptions shape the probe plan. The zero value is a plan of about
// 40 requests.
type ProbeOptions struct {
	// Lengths are the prompt lengths, in tokens, each sent alone (nil
	// means {64, 256, 1024}).
	Lengths []int
	// Concurrency are the burst sizes of equal-length requests (nil
	// means {2, 4, 8, 16}), at BurstLength tokens (0 means the first
	// of Lengths).
	Concurrency []int
	BurstLength int
	// TG is every request's generation length (0 means 32).
	TG int
	// Repeat is how many times each is measured (0 means 3).
	Repeat int
	// Prefixes are the lengths, in tokens, of the shared prefixes the
	// cached probe sends (nil means {512, 2048}; NoPrefixes sends
	// none): per prefix, requests whose prompts all open with the same
	// text of about that many tokens (a system message), sent alone
	// after one request has put it in the server's prefix cache, so
	// that the server prefills only their own tokens on top of the
	// cached ones (see CachedPlans).
	Prefixes   []int
	NoPrefixes bool
	// Suffixes are the tokens each such prompt has beyond the shortest
	// the prefix, the chat template and the salt allow (nil means
	// {0, 32, 256}): 0 prefills little more than the salt.
	Suffixes []int
	// RequestTimeout bounds each request (0: none beyond ctx).
	RequestTimeout time.Duration
	// Simulated marks the rows as measured against the embedded engine.
	Simulated bool
}

// CachedPlans are the cached probe's plans, one per prefix of Prefixes
// (none with NoPrefixes): each a Runner plan of requests sent alone,
// PP counted beyond the prefixed prompt's shortest (Suffixes), with one
// warmup request that caches the prefix.
func (o ProbeOptions) CachedPlans() []CachedPlan {
	if o.NoPrefixes {
		return nil
	}
	prefixes, suffixes := o.Prefixes, o.Suffixes
	if len(prefixes) == 0 {
		prefixes = []int{512, 2048}
	}
	if len(suffixes) == 0 {
		suffixes = []int{0, 32, 256}
	}
	tg, rep := o.TG, o.Repeat
	if tg <= 0 {
		tg = 32
	}
	if rep <= 0 {
		rep = 3
	}
	var out []CachedPlan
	for _, k := range prefixes {
		out = append(out, CachedPlan{Prefix: k, Plan: benchkit.Plan{PP: suffixes, TG: []int{tg}, AllCombinations: true, Concurrency: []int{1},
			Repeat: rep, Warmup: 1, Stream: true, Salt: true, UsePrefixCache: true}})
	}
	return out
}

// Plans are the probe's two Runner plans: the lengths alone, then the
// bursts. Both stream (the fit reads the tokens' instants) and salt every
// prompt (no request reuses another's prefix). The first opens with one
// warm-up request, left out: a server's first request may load the model
// (Ollama's took 1.4 s beside 30 ms for the next), which no other
// request pays.
func (o ProbeOptions) Plans() []benchkit.Plan {
	lengths, conc := o.Lengths, o.Concurrency
	if len(lengths) == 0 {
		lengths = []int{64, 256, 1024}
	}
	if len(conc) == 0 {
		conc = []int{2, 4, 8, 16}
	}
	bl := o.BurstLength
	if bl <= 0 {
		bl = lengths[0]
	}
	tg, rep := o.TG, o.Repeat
	if tg <= 0 {
		tg = 32
	}
	if rep <= 0 {
		rep = 3
	}
	return []benchkit.Plan{
		{PP: lengths, TG: []int{tg}, AllCombinations: true, Concurrency: []int{1}, Repeat: rep, Warmup: 1, Stream: true, Salt: true},
		{PP: []int{bl}, TG: []int{tg}, Concurrency: conc, Repeat: rep, Stream: true, Salt: true},
	}
}

// Probe runs the probe plan against eng (ProbeOptions.Plans: a few
// prompt lengths each sent alone, then a few concurrencies as bursts of
// equal-length requests; then ProbeOptions.CachedPlans: requests sent
// alone on a few cached prefixes) and returns its rows, numbered by plan
// in Labels.Run, for Fit. The rows of a cached plan none of whose
// requests the server said it served cached tokens are left out: a
// server that caches without saying so (or says nothing) would have them
// read as prefilling the whole prompt.
func Probe(ctx context.Context, eng engine.Engine, model string, b *promptsize.Builder, opts ProbeOptions) ([]benchkit.Request, error) {
	cached := opts.CachedPlans()
	rows, err := Measure(ctx, eng, model, b, HeldOut{Bursts: opts.Plans(), Cached: cached, RequestTimeout: opts.RequestTimeout, Simulated: opts.Simulated})
	if err != nil || len(cached) == 0 {
		return rows, err
	}
	first := 0 // the first run of the cached plans
	for _, p := range opts.Plans() {
		first += len(p.Cells())
	}
	said := map[int]bool{}
	for _, r := range rows {
		if r.Run >= first && cachedTokens(r) > 0 {
			said[r.Run] = true
		}
	}
	out := rows[:0]
	for _, r := range rows {
		if r.Run < first || said[r.Run] {
			out = append(out, r)
		}
	}
	return out, nil
}

// CachedPlan is a Runner plan whose prompts all open with the same text
// of about Prefix tokens, sent as the system message, so that a server
// that caches prefixes serves it from its cache once a request has
// prefilled it (the plan's warmup). Plan.PP count the tokens beyond the
// shortest prompt the prefix, the chat template and the salt allow
// (the Builder's Overhead with the prefix, and 16 for the salt); the
// rows carry the whole length in Labels.PPTarget, and the server's count
// of the cached tokens in CachedTokens where it reports one.
type CachedPlan struct {
	Prefix int
	Plan   benchkit.Plan
}

// saltMargin is the room left in a cached plan's prompts for the salt
// (promptsize.RunSalt) and its newline.
const saltMargin = 16

// prefixed returns a Builder whose prompts open with a system message
// of about k tokens, and the shortest prompt it builds with a salt.
func prefixed(ctx context.Context, b *promptsize.Builder, k int) (*promptsize.Builder, int, error) {
	p, err := b.Build(ctx, k)
	if err != nil {
		return nil, 0, fmt.Errorf("twin: build a shared prefix of %d tokens: %w", k, err)
	}
	text := ""
	for _, m := range p.Messages {
		if m.Role == "user" {
			text = m.Content
		}
	}
	pb := &promptsize.Builder{Counter: b.Counter, System: text, Fill: b.Fill, Atoms: b.Atoms, Corpus: b.Corpus}
	over, err := pb.Overhead(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("twin: count a shared prefix of %d tokens: %w", k, err)
	}
	return pb, over + saltMargin, nil
}

// HeldOut is a set of runs to measure on both the server and the twin,
// never fitted: Runner plans and open-loop loads.
type HeldOut struct {
	// Bursts are Runner plans: every cell is one run.
	Bursts []benchkit.Plan
	// Cached are Runner plans of prompts that share a prefix: every
	// cell is one run, after the Bursts'.
	Cached []CachedPlan
	// Loads are open-loop (or closed-loop) runs of a Load.
	Loads []LoadRun
	// RequestTimeout bounds each request (0: none beyond ctx).
	RequestTimeout time.Duration
	// Simulated marks the rows as measured against the embedded engine.
	Simulated bool
}

// LoadRun is one Load run: a workload on a traffic.
type LoadRun struct {
	Workload benchkit.Workload
	Traffic  benchkit.Traffic
	// SharedPrefix, when positive, opens every prompt with the same text
	// of about that many tokens (benchkit.Load.SharedPrefix), which a
	// server that caches prefixes serves from its cache (exo's bench
	// requests are then sent with use_prefix_cache).
	SharedPrefix int
}

// Describe names the held-out runs, for Fidelity.Plans.
func (h HeldOut) Describe() []string {
	var out []string
	for _, p := range h.Bursts {
		out = append(out, fmt.Sprintf("bursts pp=%v tg=%v concurrency=%v repeat=%d", p.PP, p.TG, p.Concurrency, max(p.Repeat, 1)))
	}
	for _, c := range h.Cached {
		p := c.Plan
		out = append(out, fmt.Sprintf("cached prefix=%d pp=prefix+%v tg=%v concurrency=%v repeat=%d", c.Prefix, p.PP, p.TG, p.Concurrency, max(p.Repeat, 1)))
	}
	for _, l := range h.Loads {
		w := fmt.Sprintf("%T", l.Workload)
		if ln, ok := l.Workload.(benchkit.Lengths); ok {
			w = fmt.Sprintf("lengths in=%d out=%d range=%g", ln.Input, ln.Output, ln.RangeRatio)
		}
		shape := l.Traffic.Burstiness
		if shape == 0 {
			shape = 1 // Poisson
		}
		sp := ""
		if l.SharedPrefix > 0 {
			sp = fmt.Sprintf(" shared prefix=%d", l.SharedPrefix)
		}
		out = append(out, fmt.Sprintf("load %s%s at %.3g/s (burstiness %g) requests=%d", w, sp, l.Traffic.Rate, shape, l.Traffic.NumRequests))
	}
	return out
}

// Measure runs h against eng and returns every row, Labels.Run numbering
// the runs in order (each cell of each plan of Bursts, then of Cached,
// then each load), so that the rows of the same plans measured
// elsewhere pair with them (Compare).
func Measure(ctx context.Context, eng engine.Engine, model string, b *promptsize.Builder, h HeldOut) ([]benchkit.Request, error) {
	var out []benchkit.Request
	run := 0
	type planOn struct {
		p benchkit.Plan
		b *promptsize.Builder
	}
	var plans []planOn
	for _, p := range h.Bursts {
		plans = append(plans, planOn{p, b})
	}
	for _, c := range h.Cached {
		if c.Prefix < 1 {
			return out, fmt.Errorf("twin: a cached plan's prefix must be positive, got %d tokens", c.Prefix)
		}
		for _, n := range c.Plan.PP {
			if n < 0 {
				return out, fmt.Errorf("twin: a cached plan's pp counts the tokens beyond its shortest prompt and cannot be negative, got %d", n)
			}
		}
		pb, least, err := prefixed(ctx, b, c.Prefix)
		if err != nil {
			return out, err
		}
		p := c.Plan
		p.PP = nil
		for _, n := range c.Plan.PP {
			p.PP = append(p.PP, least+n)
		}
		plans = append(plans, planOn{p, pb})
	}
	for _, pl := range plans {
		p := pl.p
		r := &benchkit.Runner{Engine: eng, Model: model, Builder: pl.b, RequestTimeout: h.RequestTimeout, Simulated: h.Simulated,
			Sleep: func(context.Context, time.Duration) error { return nil }}
		rep, err := r.Run(ctx, p)
		if err != nil {
			return out, err
		}
		cells := map[[3]int]int{}
		for _, q := range rep.Requests {
			k := [3]int{q.PPTarget, q.TGTarget, q.Concurrency}
			if _, ok := cells[k]; !ok {
				cells[k] = run
				run++
			}
			q.Run = cells[k]
			out = append(out, q)
		}
	}
	for _, l := range h.Loads {
		ld := &benchkit.Load{Engine: eng, Model: model, Builder: b, RequestTimeout: h.RequestTimeout, Simulated: h.Simulated, SharedPrefix: l.SharedPrefix}
		// exo's bench requests skip its prefix cache unless asked.
		ld.Request.UsePrefixCache = l.SharedPrefix > 0
		lr, err := ld.Run(ctx, l.Workload, l.Traffic, timing.SLO{})
		if err != nil {
			return out, err
		}
		for _, q := range lr.Requests {
			q.Run = run
			out = append(out, q)
		}
		run++
	}
	return out, nil
}

// LargestBurstRate is the request rate, in requests per second, of the
// largest burst among rows (a probe's): its concurrency over its
// completed requests' mean E2E, c / mean(e2e_s). Held-out loads take
// their rates from it, to be sent above what the probe measured. It is 1
// when no request of a burst completed.
func LargestBurstRate(rows []benchkit.Request) float64 {
	conc, sum, n := 0, 0.0, 0
	for _, r := range rows {
		if r.Failed() || r.E2ES == nil || r.Concurrency < conc {
			continue
		}
		if r.Concurrency > conc {
			conc, sum, n = r.Concurrency, 0, 0
		}
		sum += *r.E2ES
		n++
	}
	if n == 0 || sum <= 0 {
		return 1
	}
	return float64(conc) / (sum / float64(n))
}
