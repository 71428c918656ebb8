package benchkit

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/metrics/view"
)

// What a difference between the client's and the server's mean holds.
const (
	containsTTFT = "the HTTP request and response path, response framing and the network (the server's clock starts at its frontend)"
	containsStep = "network jitter and read batching; vLLM's ITL is one sample per engine step, so several tokens per step widen it"
	containsE2E  = "the HTTP request and response path and the network"
	// TGI's mean time per token is its inference time over n, prefill
	// included; the client's TPOT is (E2E − TTFT) / (n − 1).
	containsTGITPOT = "TGI's prefill, which its mean time per token includes (inference time / n) and the client's TPOT leaves out, against one gap fewer"
)

// compareServer sets the server's means beside the client's summary of
// the same run.
func compareServer(v *view.View, s Summary) {
	v.Beside = nil
	add := func(name string, client *float64, server *view.Figure, contains string) {
		if client == nil || server == nil {
			return
		}
		v.Beside = append(v.Beside, view.Comparison{Figure: name, Client: *client, Server: server.Mean,
			Difference: *client - server.Mean, Contains: contains})
	}
	add("ttft_s", s.TTFT.Mean, v.TTFT, containsTTFT)
	tpot := containsStep
	if v.TPOT != nil && strings.HasPrefix(v.TPOT.Family, "tgi_") {
		tpot = containsTGITPOT
	}
	add("tpot_s", s.TPOT.Mean, v.TPOT, tpot)
	add("itl_s", s.ITL.Mean, v.ITL, containsStep)
	add("e2e_s", s.E2E.Mean, v.E2E, containsE2E)
}

// reachedServer counts the requests the server can have finished: all
// but those that never connected and those never sent (a session's turns
// after it gave up).
func reachedServer(rows []Request) int {
	return countIf(rows, func(r Request) bool {
		return r.ErrorKind != string(engine.KindConnect) && r.ErrorKind != errNotSent
	})
}

// serverGrids are the tables of the server's figures beside the client's,
// in the order they are printed.
var serverGrids = []func([]Summary) (head []string, lines [][]string, legend string){serverGrid, responseGrid}

// serverGrid is the table of the server's own figures beside the
// client's, one line per run that has them; no lines when none has.
func serverGrid(sums []Summary) (head []string, lines [][]string, legend string) {
	head = []string{"traffic", "reqs srv/cli", "ttft ms mean cli/srv/Δ", "srv ttft ms p50; p99", "itl ms mean cli/srv", "tpot ms mean cli/srv",
		"queue ms mean; p99", "prefill ms mean", "decode ms mean", "e2e ms mean cli/srv", "cache hit % srv/workload"}
	url := ""
	sampled := slices.ContainsFunc(sums, func(s Summary) bool { return s.Server != nil && len(s.Server.Samples) > 0 })
	if sampled {
		head = append(head, "gauge peaks run/wait/kv % (samples)")
	}
	for _, s := range sums {
		v := s.Server
		if v == nil || v.Requests == nil && v.TTFT == nil && v.E2E == nil {
			continue
		}
		url = v.URL
		line := []string{
			s.Traffic,
			fmt.Sprintf("%s/%d", fnum(v.Requests), s.Completed),
			cms(s.TTFT.Mean) + "/" + smean(v.TTFT) + "/" + sdiff(s.TTFT.Mean, v.TTFT),
			spct(v.TTFT, 0.5) + "; " + spct(v.TTFT, 0.99),
			cms(s.ITL.Mean) + "/" + smean(v.ITL),
			cms(s.TPOT.Mean) + "/" + smean(v.TPOT),
			smean(v.Queue) + "; " + spct(v.Queue, 0.99),
			smean(v.Prefill),
			smean(v.Decode),
			cms(s.E2E.Mean) + "/" + smean(v.E2E),
			hitRate(v.PrefixHitRate, s.TheoreticalHitRate),
		}
		if sampled {
			line = append(line, peaks(v.Samples))
		}
		lines = append(lines, line)
	}
	legend = "The server's own view (" + url + ", Δ over each run): Δ = client − server mean, the HTTP path and network;" +
		" a server percentile is histogram_quantile over its buckets, with the bucket's bounds (lo, hi], ≥ when past the last."
	return head, lines, legend
}

// cms is a client mean in milliseconds to the server columns' precision.
func cms(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *v*1000)
}

// smean is a server figure's mean in milliseconds, "-" when absent.
func smean(f *view.Figure) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", f.Mean*1000)
}

// sdiff is the client's mean less the server's, in milliseconds.
func sdiff(client *float64, f *view.Figure) string {
	if client == nil || f == nil {
		return "-"
	}
	return fmt.Sprintf("%+.2f", (*client-f.Mean)*1000)
}

// spct is a server percentile in milliseconds with its bucket's bounds.
func spct(f *view.Figure, q float64) string {
	if f == nil {
		return "-"
	}
	p := f.P50
	switch q {
	case 0.9:
		p = f.P90
	case 0.99:
		p = f.P99
	}
	g := func(v float64) string { return strconv.FormatFloat(v*1000, 'g', 3, 64) }
	if p.AtLeast || p.Upper == nil {
		return "≥" + g(p.Value)
	}
	return g(p.Value) + " (" + g(p.Lower) + ", " + g(*p.Upper) + "]"
}

// fnum writes a count, "-" when unknown.
func fnum(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// ResponseTimings summarise the server's own timings of each response
// (engine.ServerStats from llama.cpp's timings, Ollama's durations, TGI's
// headers) over the completed requests that carried them, beside the
// client's: the per-request view a server without /metrics gives.
type ResponseTimings struct {
	// Source is the server that reported them ("ollama", "llama.cpp",
	// "tgi"); Requests how many requests did.
	Source   string `json:"source"`
	Requests int    `json:"requests"`
	// The durations each server reports, in seconds; null where none of
	// the requests had one.
	Queue     *Quantiles `json:"queue_s,omitempty"`
	Load      *Quantiles `json:"load_s,omitempty"`
	Prefill   *Quantiles `json:"prefill_s,omitempty"`
	Decode    *Quantiles `json:"decode_s,omitempty"`
	Inference *Quantiles `json:"inference_s,omitempty"`
	Total     *Quantiles `json:"total_s,omitempty"`
	// FirstToken is queue + load + prefill per request, the server's
	// share of the client's TTFT; DecodePerToken is decode / (n − 1),
	// the server's TPOT (llama.cpp's predicted_ms and Ollama's
	// eval_duration both run from the first sampled token to the last).
	FirstToken     *Quantiles `json:"first_token_s,omitempty"`
	DecodePerToken *Quantiles `json:"decode_per_token_s,omitempty"`
	// Beside sets the server's means beside the client's.
	Beside []view.Comparison `json:"beside_client,omitempty"`
}

// What a difference between the client's per-request figure and the
// server's own holds.
const (
	containsFirstToken = "the HTTP request and response path, the network, and what the server does outside its timers (template, tokenization where it is not timed, the first token's detokenization)"
	containsDecodeTok  = "network jitter and read batching, and the server's streaming path"
	containsTotal      = "the HTTP request and response path and the network"
)

// responseTimings summarises the completed requests' per-response
// server timings; nil when none carried any.
func responseTimings(reqs []Request, s Summary) *ResponseTimings {
	var rt ResponseTimings
	var queue, load, prefill, decode, inference, total, first, perTok []float64
	add := func(dst *[]float64, d *time.Duration) {
		if d != nil {
			*dst = append(*dst, d.Seconds())
		}
	}
	for _, r := range reqs {
		st := r.Stats
		if r.Failed() || st == nil || st.Source == "" {
			continue
		}
		if rt.Source == "" {
			rt.Source = st.Source
		} else if rt.Source != st.Source {
			rt.Source = "mixed"
		}
		rt.Requests++
		add(&queue, st.Queue)
		add(&load, st.Load)
		add(&prefill, st.Prefill)
		add(&decode, st.Decode)
		add(&inference, st.Inference)
		add(&total, st.Total)
		if st.Prefill != nil {
			f := *st.Prefill
			for _, d := range []*time.Duration{st.Queue, st.Load} {
				if d != nil {
					f += *d
				}
			}
			first = append(first, f.Seconds())
		}
		if st.Decode != nil && st.GenerationTokens >= 2 {
			perTok = append(perTok, st.Decode.Seconds()/float64(st.GenerationTokens-1))
		}
	}
	if rt.Requests == 0 {
		return nil
	}
	q := func(x []float64) *Quantiles {
		if len(x) == 0 {
			return nil
		}
		v := quantiles(x)
		return &v
	}
	rt.Queue, rt.Load, rt.Prefill, rt.Decode = q(queue), q(load), q(prefill), q(decode)
	rt.Inference, rt.Total, rt.FirstToken, rt.DecodePerToken = q(inference), q(total), q(first), q(perTok)
	beside := func(name string, client *float64, server *Quantiles, contains string) {
		if client == nil || server == nil || server.Mean == nil {
			return
		}
		rt.Beside = append(rt.Beside, view.Comparison{Figure: name, Client: *client, Server: *server.Mean,
			Difference: *client - *server.Mean, Contains: contains})
	}
	beside("ttft_s", s.TTFT.Mean, rt.FirstToken, containsFirstToken)
	beside("tpot_s", s.TPOT.Mean, rt.DecodePerToken, containsDecodeTok)
	beside("e2e_s", s.E2E.Mean, rt.Total, containsTotal)
	return &rt
}

// responseGrid is the table of the servers' per-response timings beside
// the client's, one line per run that has them.
func responseGrid(sums []Summary) (head []string, lines [][]string, legend string) {
	head = []string{"traffic", "reqs timed/ok", "ttft ms mean cli/srv/Δ", "srv prefill ms mean; p99", "srv queue+load ms mean", "tpot ms mean cli/srv", "srv decode ms mean", "e2e ms mean cli/srv"}
	src := ""
	for _, s := range sums {
		rt := s.Responses
		if rt == nil {
			continue
		}
		src = rt.Source
		qmean := func(q *Quantiles) *float64 {
			if q == nil {
				return nil
			}
			return q.Mean
		}
		var wait *float64
		for _, q := range []*Quantiles{rt.Queue, rt.Load} {
			if m := qmean(q); m != nil {
				w := *m
				if wait != nil {
					w += *wait
				}
				wait = &w
			}
		}
		p99 := func(q *Quantiles) *float64 {
			if q == nil {
				return nil
			}
			return q.P99
		}
		diff := "-"
		if c, sv := s.TTFT.Mean, qmean(rt.FirstToken); c != nil && sv != nil {
			diff = fmt.Sprintf("%+.2f", (*c-*sv)*1000)
		}
		lines = append(lines, []string{
			s.Traffic,
			fmt.Sprintf("%d/%d", rt.Requests, s.Completed),
			cms(s.TTFT.Mean) + "/" + cms(qmean(rt.FirstToken)) + "/" + diff,
			cms(qmean(rt.Prefill)) + "; " + cms(p99(rt.Prefill)),
			cms(wait),
			cms(s.TPOT.Mean) + "/" + cms(qmean(rt.DecodePerToken)),
			cms(qmean(rt.Decode)),
			cms(s.E2E.Mean) + "/" + cms(qmean(rt.Total)),
		})
	}
	legend = "The server's own timings of each response (" + src + "): its first token is queue + load + prefill, its TPOT decode / (n − 1); Δ = client − server, the HTTP path, the network and what the server does outside its timers."
	return head, lines, legend
}

// WriteServerView writes the server's own view of the summary's run
// beside the client's, as the load table's server columns do, in lines
// for a program that prints one run as text: the /metrics window (Server)
// and the per-response timings (Responses), each with what it lacks. It
// writes nothing when the summary has neither.
func (s Summary) WriteServerView(w io.Writer) error {
	var b strings.Builder
	for _, grid := range serverGrids {
		head, lines, legend := grid([]Summary{s})
		if len(lines) == 0 {
			continue
		}
		b.WriteString(legend + "\n")
		for i, h := range head[1:] {
			fmt.Fprintf(&b, "  %-26s %s\n", h, lines[0][i+1])
		}
	}
	if v := s.Server; v != nil {
		for _, wn := range v.Warnings {
			b.WriteString("server metrics: " + wn + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// peaks writes the largest running and waiting counts and KV usage of
// the samples, and how many there were.
func peaks(smp []view.Sample) string {
	if len(smp) == 0 {
		return "-"
	}
	top := func(get func(view.Sample) *float64, scale float64) string {
		var m *float64
		for _, x := range smp {
			if v := get(x); v != nil && (m == nil || *v > *m) {
				m = v
			}
		}
		if m == nil {
			return "-"
		}
		return strconv.FormatFloat(*m*scale, 'g', 3, 64)
	}
	return fmt.Sprintf("%s/%s/%s (%d)", top(func(x view.Sample) *float64 { return x.Running }, 1),
		top(func(x view.Sample) *float64 { return x.Waiting }, 1), top(func(x view.Sample) *float64 { return x.KVUsage }, 100), len(smp))
}
