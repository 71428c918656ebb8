package twin

import (
	"fmt"
	"sort"

	"github.com/inferbench/inferbench/benchkit"
)

// promptTokens is the server's count of r's prompt, else the client's.
func promptTokens(r benchkit.Request) int {
	switch {
	case r.ServerPromptTokens != nil:
		return *r.ServerPromptTokens
	case r.Stats != nil && r.Stats.PromptTokens > 0:
		return r.Stats.PromptTokens
	}
	return r.PPTokens
}

// cachedTokens is how many of r's prompt tokens the server served from
// its prefix cache, 0 when it did not say.
func cachedTokens(r benchkit.Request) int {
	switch {
	case r.CachedTokens != nil:
		return *r.CachedTokens
	case r.Stats != nil && r.Stats.CachedTokens != nil:
		return *r.Stats.CachedTokens
	}
	return 0
}

// burstKey groups the rows of one burst: a Runner's cell and repeat in
// one run, released at one instant.
type burstKey struct {
	run, pp, tg, conc, repeat int
	placement, thinking       string
}

func keyOf(r benchkit.Request) burstKey {
	return burstKey{r.Run, r.PPTarget, r.TGTarget, r.Concurrency, r.Repeat, fmt.Sprint(r.Placement), r.Thinking}
}

// observations reads what the fit uses from rows (see the package
// documentation's Fit section), and the largest batch a burst showed,
// with the cap on running requests where a burst was larger than that.
func observations(rows []benchkit.Request) (out []obs, maxBatch, capped int) {
	largest := 0
	bursts := map[burstKey][]benchkit.Request{}
	var order []burstKey
	for _, r := range rows {
		if r.Failed() || r.Probe || r.Rate != nil || r.Concurrency < 1 {
			continue
		}
		k := keyOf(r)
		if _, ok := bursts[k]; !ok {
			order = append(order, k)
		}
		bursts[k] = append(bursts[k], r)
		if r.Concurrency != 1 {
			continue
		}
		p, c := promptTokens(r), cachedTokens(r)
		n := 0
		if r.CompletionTokens != nil {
			n = *r.CompletionTokens
		}
		if st := r.Stats; st != nil {
			switch {
			case st.Source == "" && st.PromptTPS > 0 && p-c-1 > 0:
				// exo prefills every uncached token but the last.
				out = append(out, obs{kind: obsPrefill, server: true, t: float64(p-c-1) / st.PromptTPS, n: p - c - 1, off: c})
			case st.Source != "" && st.Prefill != nil && st.Prefill.Seconds() > 0 && p-c > 0:
				out = append(out, obs{kind: obsPrefill, server: true, t: st.Prefill.Seconds(), n: p - c, off: c})
			}
			if n > 1 && len(r.ITLS) == 0 {
				// n − 1 steps at batch 1 over contexts p−1+k, k = 1…n−1.
				o := obs{kind: obsDecode, server: true}
				for k := 1; k < n; k++ {
					o.steps = append(o.steps, step{1, float64(p - 1 + k)})
				}
				switch {
				case st.Source == "" && st.GenerationTPS > 0:
					o.t = float64(n-1) / st.GenerationTPS
					out = append(out, o)
				case st.Source != "" && st.Decode != nil && st.Decode.Seconds() > 0:
					o.t = st.Decode.Seconds()
					out = append(out, o)
				}
			}
		}
		if r.Stream && r.TTFTS != nil && *r.TTFTS > 0 && p-c-1 >= 0 {
			o := obs{kind: obsTTFT, t: *r.TTFTS, n: p - c - 1, off: c, ctx: p - 1, tier: 2}
			if r.Stats != nil && slotted(r.Stats.Source) {
				// llama-server and Ollama's runner sample the first
				// token in the prompt's last batch: the whole prompt,
				// and no step of its own.
				o.n, o.inBatch = p-c, true
			}
			out = append(out, o)
		}
	}
	for _, k := range order {
		steps, _ := burstSteps(bursts[k])
		mb := together(bursts[k])
		out = append(out, steps...)
		maxBatch = max(maxBatch, mb)
		if len(bursts[k]) == k.conc {
			largest = max(largest, k.conc)
		}
	}
	if maxBatch > 0 && largest > maxBatch {
		// A burst larger than any batch seen: the server's cap.
		capped = maxBatch
	}
	return out, maxBatch, capped
}

// together counts the requests of a burst that got their first token
// before any of them got its last: those the server ran at once. A burst larger
// than the server's cap on running requests starts the rest only as
// others end.
func together(rows []benchkit.Request) int {
	end := -1.0
	for _, r := range rows {
		// Its last token's instant where it streamed, else its end.
		last := -1.0
		switch {
		case r.TTFTS != nil && len(r.ITLS) > 0:
			last = r.SendOffsetS + *r.TTFTS
			for _, g := range r.ITLS {
				last += g
			}
		case r.E2ES != nil:
			last = r.SendOffsetS + *r.E2ES
		}
		if last >= 0 && (end < 0 || last < end) {
			end = last
		}
	}
	n := 0
	for _, r := range rows {
		if r.TTFTS != nil && r.SendOffsetS+*r.TTFTS < end {
			n++
		}
	}
	return n
}

// slotted says whether the server whose timings name source schedules
// as llama-server: a fixed number of slots, each prompt fed in batches
// mixed with the generating slots' tokens, its first token sampled in
// its last batch. llama.cpp does; so does Ollama, whose runner
// (runner/llamarunner, v0.6.5: processBatch) adds each sequence's next
// inputs, up to --batch-size of them, to one llama_decode over its
// --parallel slots and samples a sequence once its prompt is all in.
func slotted(source string) bool { return source == "llama.cpp" || source == "ollama" }

// sourceOf is the Source of the rows' server timings, "" when none has
// any.
func sourceOf(rows []benchkit.Request) string {
	for _, r := range rows {
		if r.Stats != nil && r.Stats.Source != "" {
			return r.Stats.Source
		}
	}
	return ""
}

// profileOf is the embedded engine's profile that schedules as the rows'
// server did: llama.cpp's slots where its (or Ollama's) timings say so.
func profileOf(rows []benchkit.Request) string {
	for _, r := range rows {
		if r.Stats != nil && slotted(r.Stats.Source) {
			return ProfileLlamaCpp
		}
	}
	return ""
}

// stream is one request of a burst on the burst's clock: its tokens'
// instants and the context of the step that made each (prompt − 2 + k
// for its k-th token).
type stream struct {
	r    benchkit.Request
	at   []float64
	ctx  []int
	step int // the burst's step that made its first token
}

// burstSteps numbers the decode steps of one burst from its streamed
// tokens. A server that batches by iteration gives every running request
// one token per step, so a request's k-th token comes k − 1 steps after
// its first; a request whose first token comes while another runs (within
// half of that one's mean step of its first and last tokens) got it at
// the step of that other request's token nearest in time (a step apart
// is a step's duration, well above the client's jitter). Each step
// then has its batch (the requests with a token in it) and Σ context.
// Each request whose decode ran with no other request's first token in
// its span (no prefill stalled it) is one observation: the sum of its
// steps' durations, which is (n − 1) / generation_tps on the server's
// clock where the server reports it, else the client's last − first
// instant (the client's jitter at its two ends only). It also returns
// the largest batch seen.
func burstSteps(rows []benchkit.Request) ([]obs, int) {
	var ss []*stream
	for _, r := range rows {
		if !r.Stream || r.TTFTS == nil || len(r.ITLS) == 0 {
			continue
		}
		p := promptTokens(r)
		s := &stream{r: r}
		at := r.SendOffsetS + *r.TTFTS
		s.at, s.ctx = append(s.at, at), append(s.ctx, p-1)
		for j, g := range r.ITLS {
			at += g
			s.at, s.ctx = append(s.at, at), append(s.ctx, p+j)
		}
		ss = append(ss, s)
	}
	if len(ss) == 0 {
		return nil, 0
	}
	sort.SliceStable(ss, func(a, b int) bool { return ss[a].at[0] < ss[b].at[0] })
	next := 0
	for i, s := range ss {
		s.step = -1
		best := 0.0
		for _, o := range ss[:i] {
			n := len(o.at)
			if n < 2 {
				continue
			}
			mean := (o.at[n-1] - o.at[0]) / float64(n-1)
			if s.at[0] < o.at[0]-mean/2 || s.at[0] > o.at[n-1]+mean/2 {
				continue // o was not running
			}
			for k, t := range o.at {
				if d := abs(t - s.at[0]); s.step < 0 || d < best {
					s.step, best = o.step+k, d
				}
			}
		}
		if s.step < 0 {
			s.step = next
		}
		next = max(next, s.step+len(s.at))
	}
	batch := make([]int, next)
	sumCtx := make([]float64, next)
	firsts := make([]bool, next)
	for _, s := range ss {
		firsts[s.step] = true
		for k := range s.at {
			batch[s.step+k]++
			sumCtx[s.step+k] += float64(s.ctx[k])
		}
	}
	var out []obs
	mb := 0
	for _, b := range batch {
		mb = max(mb, b)
	}
	for _, s := range ss {
		n := len(s.at)
		if n < 2 {
			continue
		}
		o := obs{kind: obsDecode, t: s.at[n-1] - s.at[0], tier: 2}
		stalled := false
		for g := s.step + 1; g < s.step+n; g++ {
			stalled = stalled || firsts[g]
			o.steps = append(o.steps, step{batch[g], sumCtx[g]})
		}
		if st := s.r.Stats; st != nil {
			switch {
			case st.Source == "" && st.GenerationTPS > 0:
				o.t, o.server, o.tier = float64(n-1)/st.GenerationTPS, true, 1
			case st.Source != "" && st.Decode != nil && st.Decode.Seconds() > 0:
				o.t, o.server, o.tier = st.Decode.Seconds(), true, 1
			}
			if o.server && len(rows) == 1 {
				o.tier = 0 // alone: its batch is 1 throughout
			}
		}
		if !stalled && o.t > 0 {
			out = append(out, o)
		}
	}
	return out, mb
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
