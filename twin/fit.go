package twin

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine/sim"
)

// ErrNoData is returned by Fit when the records hold too little to fit:
// no successful request with the figures the fit reads.
var ErrNoData = errors.New("twin: not enough measured records to fit")

// FitOptions configure Fit.
type FitOptions struct {
	// PrefillChunk is the measured server's prefill chunk in tokens, by
	// which a long prompt's prefill splits into steps (0 means
	// sim.DefaultPrefillChunk, exo's; for llama.cpp's records
	// sim.DefaultLlamaCppBatch, for Ollama's OllamaBatch).
	PrefillChunk int
	// Base names the built-in preset (sim.PresetByName) whose hardware
	// and model shape the twin keeps for what the coefficients do not
	// time: the KV budget, the reported peak memory, hop latencies and
	// power. "" means "fast".
	Base string
	// Server names the measured server ("exo", "vllm", "ollama"), for the
	// Twin file.
	Server string
	// Provenance is the measured run's, when the caller has it.
	Provenance *benchkit.Provenance
	// AttentionOverKV fits the attention terms as llama.cpp's servers
	// compute them without flash attention (sim.Coefficients
	// AttentionOverKV: every token of a step against every key of the
	// one KV cache over the slots), for records of llama-server or
	// Ollama; other records ignore it. Off, each request's own causal
	// pairs. Against a real Ollama it moved the held-out bursts of
	// 1,024-token prompts' TTFT toward the measured and their TPOT away
	// (docs/TWIN.md), so it is not the default.
	AttentionOverKV bool
}

// OllamaBatch is Ollama's default batch, in tokens: the --batch-size its
// server gives the runner (num_batch, 512 in v0.6.5), the most of one
// sequence's prompt one decode takes.
const OllamaBatch = 512

// The columns of the fit: the eight Coefficients and the client's
// constant overhead on TTFT.
const (
	cOver = iota
	cDecodeBase
	cDecodeCtx
	cDecodeReq
	cPrefillBase
	cPrefillTok
	cPrefillPair
	cPrefillCached
	cClient
	nCols
)

var colNames = [nCols]string{"step_overhead_s", "decode_base_s", "decode_per_context_token_s", "decode_per_request_s",
	"prefill_base_s", "prefill_per_token_s", "prefill_per_pair_s", "prefill_per_cached_token_s", "client_overhead_s"}

// partner is the term of the other phase that reads or computes the same
// thing, to which a term the records cannot separate is tied.
var partner = map[int]int{
	cDecodeBase: cPrefillBase, cPrefillBase: cDecodeBase,
	cDecodeCtx: cPrefillCached, cPrefillCached: cDecodeCtx,
	cDecodeReq: cPrefillTok, cPrefillTok: cDecodeReq,
}

type obsKind int

const (
	obsDecode  obsKind = iota // one decode step or a mean of steps
	obsPrefill                // the server's own prefill time
	obsTTFT                   // the client's TTFT of an unqueued request
)

var kindNames = [...]string{"decode_step", "server_prefill", "client_ttft"}

// obs is one measured duration and what the model says it is made of.
type obs struct {
	kind    obsKind
	server  bool    // from the server's own timings
	tier    int     // the stage that fits it: 0 the server's, of one request alone; 1 the server's, of a burst's decode; 2 the client's
	t       float64 // seconds
	steps   []step  // decode: the steps t is the sum of
	n, off  int     // prefill: tokens prefilled after off cached ones
	ctx     int     // TTFT: the context of its first decode step
	inBatch bool    // TTFT: the first token is sampled in the last prompt batch (llama.cpp), with no decode step of its own
	overKV  bool    // every token attends over every key of the cache (sim.Coefficients.AttentionOverKV)
}

// step is one decode step: its batch and Σ contexts.
type step struct {
	batch  int
	sumCtx float64
}

// regime says, per piece of an observation (its decode step, each
// prefill chunk), whether the memory term rules.
type regime []bool

// pieces returns the observation's prefill chunks.
func (o obs) chunks(chunk int) [][2]int {
	var out [][2]int
	for done := 0; done < o.n; done += chunk {
		out = append(out, [2]int{min(chunk, o.n-done), o.off + done})
	}
	return out
}

// design returns the observation's row of the model given a regime per
// piece (nil: by the current coefficients th), and the regime it used.
func (o obs) design(chunk int, th []float64, reg regime) ([nCols]float64, regime) {
	var row [nCols]float64
	var used regime
	i := 0
	pick := func(mem, comp float64) bool {
		var m bool
		if reg != nil {
			m = reg[i]
		} else {
			m = mem >= comp
		}
		used = append(used, m)
		i++
		return m
	}
	decode := func(b int, s float64) {
		row[cOver]++
		mem := th[cDecodeBase] + th[cDecodeCtx]*s
		pairs := 0.0
		if o.overKV {
			pairs = float64(b) * s
		}
		comp := th[cDecodeReq]*float64(b) + th[cPrefillPair]*pairs
		if pick(mem, comp) {
			row[cDecodeBase]++
			row[cDecodeCtx] += s
		} else {
			row[cDecodeReq] += float64(b)
			row[cPrefillPair] += pairs
		}
	}
	prefill := func() {
		for _, c := range o.chunks(chunk) {
			n, off := float64(c[0]), float64(c[1])
			pairs := n*off + n*(n+1)/2
			if o.overKV {
				pairs = n * (off + n)
			}
			row[cOver]++
			mem := th[cPrefillBase] + th[cPrefillCached]*off
			comp := th[cPrefillTok]*n + th[cPrefillPair]*pairs
			if pick(mem, comp) {
				row[cPrefillBase]++
				row[cPrefillCached] += off
			} else {
				row[cPrefillTok] += n
				row[cPrefillPair] += pairs
			}
		}
	}
	switch o.kind {
	case obsDecode:
		for _, s := range o.steps {
			decode(s.batch, s.sumCtx)
		}
	case obsPrefill:
		prefill()
	case obsTTFT:
		row[cClient] = 1
		prefill()
		if !o.inBatch {
			decode(1, float64(o.ctx))
		}
	}
	return row, used
}

// solve fits the free columns of rows to ts, relative error weighted
// (each row divided by its measured time), with fixed holding the values
// of the columns already known. Columns no row uses are left as they
// are; columns the rows cannot separate (a rank short) and terms that
// come out negative are left out (0), and the fit repeated. A rank short
// leaves out, of the columns the rows cannot tell apart (those with a
// part in a null vector of the design), first the prefill's memory terms
// (the partners of the decode's, which they then take: see fitRegimes),
// then the step overhead (folded into the bases), then the client's
// overhead. It returns the values, which columns it set, and notes saying
// what it left out.
func solve(rows [][nCols]float64, ts []float64, free []bool, fixed []float64) ([]float64, []bool, []string) {
	th := append([]float64(nil), fixed...)
	set := make([]bool, nCols)
	if len(rows) == 0 {
		return th, set, nil
	}
	var notes []string
	use := make([]bool, nCols)
	tie := make([]int, nCols) // the column whose value a column takes; -1: its own
	for c := range nCols {
		tie[c] = -1
		if !free[c] {
			continue
		}
		for _, r := range rows {
			if r[c] != 0 {
				use[c] = true
				break
			}
		}
	}
	for range nCols {
		var cols []int
		for c := range nCols {
			if use[c] {
				cols = append(cols, c)
			}
		}
		if len(cols) == 0 {
			break
		}
		a := mat.NewDense(len(rows), len(cols), nil)
		b := mat.NewVecDense(len(rows), nil)
		for i, r := range rows {
			y := ts[i]
			for c := range nCols {
				switch {
				case !free[c]:
					y -= r[c] * fixed[c]
				case tie[c] >= 0 && !free[tie[c]]:
					y -= r[c] * fixed[tie[c]]
				}
			}
			for j, c := range cols {
				v := r[c]
				for k := range nCols {
					if tie[k] == c {
						v += r[k]
					}
				}
				a.Set(i, j, v/ts[i])
			}
			b.SetVec(i, y/ts[i])
		}
		// Each column scaled to unit norm, so that the rank test and the
		// solution do not suffer from terms of very different sizes
		// (a pair count is the square of a token count).
		scale := make([]float64, len(cols))
		for j := range cols {
			scale[j] = mat.Norm(a.ColView(j), 2)
			if scale[j] > 0 {
				for i := range rows {
					a.Set(i, j, a.At(i, j)/scale[j])
				}
			}
		}
		var svd mat.SVD
		if !svd.Factorize(a, mat.SVDThin) {
			break
		}
		if rank := svd.Rank(1e-10); rank < len(cols) {
			// The columns the records cannot tell apart are those with a
			// part in the null space of the scaled design: whose unit
			// vector the row space (the first rank right singular
			// vectors) does not hold whole. The first of them in the
			// order of preference goes.
			var v mat.Dense
			svd.VTo(&v)
			inNull := map[int]bool{}
			for j, c := range cols {
				in := 0.0
				for k := range rank {
					in += v.At(j, k) * v.At(j, k)
				}
				inNull[c] = 1-in > 1e-9
			}
			drop := -1
			for _, c := range []int{cPrefillBase, cPrefillCached, cOver, cClient, cPrefillPair, cDecodeCtx} {
				if use[c] && inNull[c] {
					drop = c
					break
				}
			}
			for j := len(cols) - 1; drop < 0 && j >= 0; j-- {
				if inNull[cols[j]] {
					drop = cols[j]
				}
			}
			if drop < 0 {
				drop = cols[len(cols)-1]
			}
			use[drop] = false
			if p, ok := partner[drop]; ok && (use[p] || !free[p]) {
				// The roofline's identity: the same work in the other
				// phase.
				tie[drop] = p
				notes = append(notes, fmt.Sprintf("%s: not separable from the other terms in these records; set to %s, the term of the other phase that does the same work", colNames[drop], colNames[p]))
				continue
			}
			notes = append(notes, fmt.Sprintf("%s: not separable from the other terms in these records; left at 0", colNames[drop]))
			continue
		}
		var x mat.VecDense
		svd.SolveVecTo(&x, b, len(cols))
		for j := range cols {
			x.SetVec(j, x.AtVec(j)/scale[j])
		}
		neg := -1
		for j := range cols {
			if x.AtVec(j) < 0 && (neg < 0 || x.AtVec(j) < x.AtVec(neg)) {
				neg = j
			}
		}
		if neg >= 0 {
			use[cols[neg]] = false
			notes = append(notes, fmt.Sprintf("%s: came out negative; left at 0", colNames[cols[neg]]))
			continue
		}
		for j, c := range cols {
			th[c] = x.AtVec(j)
			set[c] = true
		}
		for c := range nCols {
			if tie[c] >= 0 && (set[tie[c]] || !free[tie[c]]) {
				th[c], set[c] = th[tie[c]], true
			}
		}
		return th, set, notes
	}
	return th, set, notes
}

// Residuals summarise the fit's relative errors on one kind of
// observation, over the records it was fitted to: they say how well the
// model's form fits them, not how well it predicts (Fidelity does).
type Residuals struct {
	// Kind is "decode_step" (a decode step timed from a burst's streamed
	// tokens, or a mean step from the server's decode timing),
	// "server_prefill" (the server's own prefill time) or "client_ttft"
	// (the client's TTFT of a request sent alone).
	Kind string `json:"kind"`
	// N counts the observations fitted; Dropped those left out as
	// outliers.
	N       int `json:"n"`
	Dropped int `json:"dropped,omitempty"`
	// MAPE, RMS and Max are the mean absolute, root-mean-square and
	// largest absolute relative error, in percent; Bias the mean signed
	// one (positive: the model is slower than the records).
	MAPE float64 `json:"mape_pct"`
	RMS  float64 `json:"rms_pct"`
	Max  float64 `json:"max_pct"`
	Bias float64 `json:"bias_pct"`
}

func predict(o obs, chunk int, th []float64) float64 {
	row, _ := o.design(chunk, th, nil)
	s := 0.0
	for c := range nCols {
		s += row[c] * th[c]
	}
	return s
}

// fitRegimes fits the coefficients with every observation's pieces in
// the regimes regs, in three stages, each fixing the terms it identifies
// for the next: the server's own timings of requests sent alone (exact,
// their batch known), then its timings of the decode spans of bursts
// (exact, but their batches are read from the client's token instants),
// then the client's figures, for the rest.
func fitRegimes(os []obs, regs []regime, chunk int) ([]float64, []string) {
	zero := make([]float64, nCols)
	var notes []string
	fixed := zero
	free := make([]bool, nCols)
	for c := range free {
		free[c] = true
	}
	for tier := range 3 {
		var rows [][nCols]float64
		var ts []float64
		for i, o := range os {
			if o.tier != tier {
				continue
			}
			row, _ := o.design(chunk, zero, regs[i])
			rows = append(rows, row)
			ts = append(ts, o.t)
		}
		th, set, n := solve(rows, ts, free, fixed)
		if len(rows) > 0 {
			notes = append(notes, n...)
		}
		for c := range nCols {
			if set[c] {
				free[c] = false
			}
		}
		fixed = th
	}
	for c := range nCols {
		if p, ok := partner[c]; ok && free[c] && !free[p] {
			fixed[c] = fixed[p]
			notes = append(notes, fmt.Sprintf("%s: no record in its regime; set to %s, the term of the other phase that does the same work", colNames[c], colNames[p]))
		}
	}
	return fixed, notes
}

func sse(os []obs, chunk int, th []float64) float64 {
	s := 0.0
	for _, o := range os {
		r := (predict(o, chunk, th) - o.t) / o.t
		s += r * r
	}
	return s
}

// fitAll searches the regimes: it starts from every split of the decode
// steps by a batch threshold and of the prefill chunks by a size
// threshold, refits with each piece in the regime whose term the fit
// makes larger until no piece moves (at most 20 times), and keeps the fit
// of least squared relative error, a fit whose decode steps (or prefill
// chunks) fall in both regimes counted 25 % worse per phase, so that the
// client's jitter does not pass for a regime the server never entered.
func fitAll(os []obs, chunk int) ([]float64, []string) {
	batches, sizes := map[int]bool{}, map[int]bool{}
	for _, o := range os {
		batches[1] = true
		for _, s := range o.steps {
			batches[s.batch] = true
		}
		for _, c := range o.chunks(chunk) {
			sizes[c[0]] = true
		}
	}
	thresholds := func(m map[int]bool) []int {
		out := []int{1 << 30}
		for k := range m {
			out = append(out, k)
		}
		sort.Ints(out)
		return out
	}
	var best []float64
	var bestNotes []string
	bestErr := math.Inf(1)
	for _, bs := range thresholds(batches) {
		for _, ns := range thresholds(sizes) {
			regs := make([]regime, len(os))
			for i, o := range os {
				var r regime
				if o.kind != obsDecode {
					for _, c := range o.chunks(chunk) {
						r = append(r, c[0] < ns)
					}
				}
				for _, s := range o.steps {
					r = append(r, s.batch < bs)
				}
				if o.kind == obsTTFT && !o.inBatch {
					r = append(r, 1 < bs)
				}
				regs[i] = r
			}
			var th []float64
			var notes []string
			for range 20 {
				th, notes = fitRegimes(os, regs, chunk)
				moved := false
				for i, o := range os {
					_, r := o.design(chunk, th, nil)
					for j := range r {
						if r[j] != regs[i][j] {
							moved = true
						}
					}
					regs[i] = r
				}
				if !moved {
					break
				}
			}
			// Each regime beyond one per phase must earn its place: its
			// fit's squared error is counted 25 % higher per added regime.
			if e := sse(os, chunk, th) * (1 + 0.25*float64(extraRegimes(os, chunk, th))); e < bestErr {
				best, bestNotes, bestErr = th, notes, e
			}
		}
	}
	return best, bestNotes
}

// extraRegimes counts the phases whose observations fall in both of
// their regimes under th.
func extraRegimes(os []obs, chunk int, th []float64) int {
	var mem, comp [2]bool // decode, prefill
	for _, o := range os {
		_, r := o.design(chunk, th, nil)
		nd := len(o.steps)
		if o.kind == obsTTFT && !o.inBatch {
			nd = 1
		}
		np := len(r) - nd
		for i, m := range r {
			ph := 0
			if o.kind == obsPrefill || o.kind == obsTTFT && i < np {
				ph = 1
			}
			if m {
				mem[ph] = true
			} else {
				comp[ph] = true
			}
		}
	}
	n := 0
	for ph := range 2 {
		if mem[ph] && comp[ph] {
			n++
		}
	}
	return n
}

// Fit fits the embedded engine's cost model (sim.Coefficients) to the
// records of measured runs, as the package documentation describes, and
// returns the Twin with its residuals; its Fidelity is for the caller to
// fill from runs not in rows (Compare).
//
// A prefill record of n uncached tokens after offset cached ones (the
// server's cached_tokens) is fitted, chunk by chunk, as
//
//	t = max(PrefillBase + PrefillPerCachedToken · offset,
//	        PrefillPerToken · n + PrefillPerPair · (n · offset + n(n+1)/2)) + StepOverhead
//
// so records on cached prefixes of several lengths (ProbeOptions.Prefixes)
// fit PrefillPerCachedToken from the memory-bound chunks (a short suffix)
// and the offset part of PrefillPerPair from the compute-bound ones. Where
// no record's offset reaches 64 tokens the notes say so, and the cached
// terms keep the fallback (DecodePerContextToken, and PrefillPerPair from
// the chunks' own pairs).
func Fit(rows []benchkit.Request, opts FitOptions) (Twin, error) {
	profile := profileOf(rows)
	chunk := opts.PrefillChunk
	if chunk <= 0 {
		chunk = sim.DefaultPrefillChunk
		switch {
		case profile == ProfileLlamaCpp && sourceOf(rows) == "ollama":
			chunk = OllamaBatch
		case profile == ProfileLlamaCpp:
			chunk = sim.DefaultLlamaCppBatch
		}
	}
	base := opts.Base
	if base == "" {
		base = sim.Fast().Name
	}
	if _, err := sim.PresetByName(base); err != nil {
		return Twin{}, fmt.Errorf("twin: base preset: %w", err)
	}
	os, maxBatch, capped := observations(rows)
	// llama.cpp's servers (llama-server, Ollama's runner) keep one KV
	// cache over their slots and, without flash attention, score each
	// token against all its used cells: asked, the attention terms are
	// every token against every key.
	overKV := opts.AttentionOverKV && profile == ProfileLlamaCpp && slotted(sourceOf(rows))
	for i := range os {
		os[i].overKV = overKV
	}
	kinds := map[obsKind]bool{}
	for _, o := range os {
		kinds[o.kind] = true
	}
	if len(os) == 0 || !kinds[obsDecode] || !kinds[obsPrefill] && !kinds[obsTTFT] {
		return Twin{}, fmt.Errorf("%w: %d observations (decode steps, and the server's prefill times or the TTFTs of requests sent alone, are needed)", ErrNoData, len(os))
	}
	th, notes := fitAll(os, chunk)
	// Outliers: an observation whose relative residual lies more than 8
	// scaled MADs from the median of its kind and source (the server's
	// timings or the client's), and more than 1 % off, is left out, and
	// the fit repeated once; a group in which more than a tenth would go
	// is kept whole (its spread is its noise, not a few bad records).
	dropped := map[obsKind]int{}
	type group struct {
		kind   obsKind
		server bool
	}
	res := map[group][]float64{}
	for _, o := range os {
		g := group{o.kind, o.server}
		res[g] = append(res[g], (predict(o, chunk, th)-o.t)/o.t)
	}
	type bound struct{ med, mad float64 }
	bounds := map[group]bound{}
	for g, rs := range res {
		sorted := append([]float64(nil), rs...)
		sort.Float64s(sorted)
		med := stat.Quantile(0.5, stat.Empirical, sorted, nil)
		dev := make([]float64, len(rs))
		for i, r := range rs {
			dev[i] = math.Abs(r - med)
		}
		sort.Float64s(dev)
		bounds[g] = bound{med, 1.4826 * stat.Quantile(0.5, stat.Empirical, dev, nil)}
	}
	outliers := map[group]int{}
	for _, o := range os {
		g := group{o.kind, o.server}
		bd := bounds[g]
		if r := (predict(o, chunk, th) - o.t) / o.t; math.Abs(r-bd.med) > 8*bd.mad && math.Abs(r) > 0.01 {
			outliers[g]++
		}
	}
	keep := os[:0:0]
	for _, o := range os {
		bd := bounds[group{o.kind, o.server}]
		r := (predict(o, chunk, th) - o.t) / o.t
		if g := (group{o.kind, o.server}); len(res[g]) >= 5 && math.Abs(r-bd.med) > 8*bd.mad && math.Abs(r) > 0.01 && outliers[g] <= len(res[g])/10 {
			dropped[o.kind]++
			continue
		}
		keep = append(keep, o)
	}
	if len(keep) < len(os) {
		os = keep
		th, notes = fitAll(os, chunk)
	}
	if off := maxOffset(os); off < minCachedPrefix {
		notes = append(notes, fmt.Sprintf("prefix cache: no record carries a cached prefix of %d tokens or more (the largest: %d; the server reported no cached tokens, or no prompt shared a prefix): prefill_per_cached_token_s keeps its fallback, decode_per_context_token_s where the records cannot separate it, and prefill_per_pair_s is fitted from each chunk's own pairs alone", minCachedPrefix, off))
	}
	notes = dedupe(notes)
	tw := Twin{
		Version:         Version,
		Coefficients:    sim.Coefficients{MaxRunning: capped},
		PrefillChunk:    chunk,
		Profile:         profile,
		Base:            base,
		ClientOverheadS: th[cClient],
		MaxBatchSeen:    maxBatch,
		Server:          serverOf(rows, opts),
		Notes:           notes,
	}
	running := capped
	if running == 0 {
		running = maxBatch
	}
	if n, bursts := overheadSlots(rows, tw.ClientOverheadS, running); n > 0 {
		tw.OverheadSlots = n
		tw.Notes = append(tw.Notes, fmt.Sprintf("client overhead: the %d bursts of at most %d requests show it passed %d at a time (TTFT less the server's prefill grows by an overhead every %d requests)", bursts, running, n, n))
	}
	if profile == ProfileLlamaCpp && sourceOf(rows) == "ollama" && capped > 0 {
		tw.Batch = chunk * capped
	}
	cf := &tw.Coefficients
	cf.AttentionOverKV = overKV
	cf.StepOverhead, cf.DecodeBase, cf.DecodePerContextToken, cf.DecodePerRequest = th[cOver], th[cDecodeBase], th[cDecodeCtx], th[cDecodeReq]
	cf.PrefillBase, cf.PrefillPerToken, cf.PrefillPerPair, cf.PrefillPerCachedToken = th[cPrefillBase], th[cPrefillTok], th[cPrefillPair], th[cPrefillCached]
	for k := obsDecode; k <= obsTTFT; k++ {
		var rs []float64
		for _, o := range os {
			if o.kind == k {
				rs = append(rs, 100*(predict(o, chunk, th)-o.t)/o.t)
			}
		}
		if len(rs) == 0 && dropped[k] == 0 {
			continue
		}
		r := Residuals{Kind: kindNames[k], N: len(rs), Dropped: dropped[k]}
		for _, x := range rs {
			r.MAPE += math.Abs(x) / float64(len(rs))
			r.RMS += x * x / float64(len(rs))
			r.Max = max(r.Max, math.Abs(x))
			r.Bias += x / float64(len(rs))
		}
		r.RMS = math.Sqrt(r.RMS)
		tw.Residuals = append(tw.Residuals, r)
	}
	if capped == 0 && maxBatch > 0 {
		tw.Notes = append(tw.Notes, fmt.Sprintf("max_running: no burst was larger than the server ran at once (the largest batch seen: %d); the engine's own cap applies", maxBatch))
	}
	return tw, nil
}

// minCachedPrefix is the least cached offset, in tokens, of a prefill
// record that tells the prefill's cached-prefix terms apart: below it a
// prompt shares no more than the chat template with earlier ones.
const minCachedPrefix = 64

// maxOffset is the largest cached offset of os's prefill records.
func maxOffset(os []obs) int {
	off := 0
	for _, o := range os {
		if o.kind != obsDecode {
			off = max(off, o.off)
		}
	}
	return off
}

// serverOf names what the rows were measured on.
func serverOf(rows []benchkit.Request, opts FitOptions) Server {
	s := Server{Name: opts.Server, Provenance: opts.Provenance}
	for _, r := range rows {
		if r.Failed() {
			continue
		}
		s.Model, s.ServedModel = r.Model, r.ServedModel
		if r.Stats != nil && s.Name == "" {
			s.Name = r.Stats.Source
			if s.Name == "" {
				s.Name = "exo"
			}
		}
		s.Simulated = r.Simulated
		break
	}
	for _, r := range rows {
		if !r.Failed() {
			s.Requests++
		}
	}
	return s
}

// dedupe keeps the first of each note.
func dedupe(notes []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range notes {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
