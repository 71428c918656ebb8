package benchkit

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/metrics"
	"github.com/inferbench/inferbench/engine/metrics/view"
)

// What a difference between the client's mean and the server's /metrics
// mean holds, by server: where each server's clock starts and stops.
const (
	containsVLLMTTFT = "the HTTP request and response path (parsing, the chat template, response framing) and the network: vLLM's TTFT starts at its frontend's arrival, with tokenization and its queue inside"
	containsVLLME2E  = "the HTTP request and response path (parsing, the chat template, response framing) and the network: vLLM's E2E runs from its frontend's arrival to the last token, its queue inside"
	containsSGLTTFT  = "the HTTP request and response path (parsing, the chat template, response framing) and the network: SGLang's TTFT starts when its tokenizer manager takes the request, with tokenization and its queue inside"
	containsSGLE2E   = "the HTTP request and response path (parsing, the chat template, response framing) and the network: SGLang's E2E runs from its tokenizer manager to the last token, its queue inside"
	containsTGIE2E   = "the HTTP request and response path and the network: TGI's request duration holds validation, its queue and inference"
	containsOtherE2E = "the HTTP request and response path and the network, and whatever the server does outside its timer"
	containsStep     = "network jitter and read batching; vLLM's ITL is one sample per engine step, so several tokens per step widen it"
	containsSGLStep  = "network jitter and read batching; SGLang's ITL is token-weighted (an output batch's interval shared by its tokens)"
	// TGI's mean time per token is its inference time over n, prefill
	// included; the client's TPOT is (E2E − TTFT) / (n − 1).
	containsTGITPOT = "TGI's prefill, which its mean time per token includes (inference time / n) and the client's TPOT leaves out, against one gap fewer"
)

// metricsContains says what a difference between the client's mean of
// figure ("ttft_s", "tpot_s", "itl_s", "e2e_s") and a /metrics mean of
// server holds.
func metricsContains(server metrics.Server, figure string) string {
	switch figure {
	case "ttft_s":
		if server == metrics.ServerSGLang {
			return containsSGLTTFT
		}
		return containsVLLMTTFT
	case "e2e_s":
		switch server {
		case metrics.ServerVLLM:
			return containsVLLME2E
		case metrics.ServerSGLang:
			return containsSGLE2E
		case metrics.ServerTGI:
			return containsTGIE2E
		}
		return containsOtherE2E
	case "tpot_s":
		if server == metrics.ServerTGI {
			return containsTGITPOT
		}
	}
	if server == metrics.ServerSGLang {
		return containsSGLStep
	}
	return containsStep
}

// compareServer sets the server's means beside the client's summary of
// the same run, each with what the difference holds on that server.
func compareServer(v *view.View, s Summary) {
	v.Beside = nil
	add := func(name string, client *float64, server *view.Figure) {
		if client == nil || server == nil {
			return
		}
		v.Beside = append(v.Beside, view.Comparison{Figure: name, Client: *client, Server: server.Mean,
			Difference: *client - server.Mean, Contains: metricsContains(v.Server, name)})
	}
	add("ttft_s", s.TTFT.Mean, v.TTFT)
	add("tpot_s", s.TPOT.Mean, v.TPOT)
	add("itl_s", s.ITL.Mean, v.ITL)
	add("e2e_s", s.E2E.Mean, v.E2E)
}

// serverCounts is what the client knows of a run's requests, for the
// server view to check the server's counters against: the requests that
// completed, those that reached the server, and the completed requests'
// generated tokens as the server counted them (its own stats, else its
// usage), null when one of them has no such count.
func serverCounts(rows []Request) view.Counts {
	c := view.Counts{Sent: reachedServer(rows)}
	tokens, known := 0, true
	for _, r := range rows {
		if r.Failed() {
			continue
		}
		c.Completed++
		switch {
		case r.Stats != nil:
			tokens += r.Stats.GenerationTokens
		case r.ServerPromptTokens != nil && r.CompletionTokens != nil && !r.HasWarning(WarnClientCounted):
			tokens += *r.CompletionTokens
		default:
			known = false
		}
	}
	if known {
		c.OutputTokens = &tokens
	}
	return c
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
	has := func(f func(v *view.View) bool) bool {
		return slices.ContainsFunc(sums, func(s Summary) bool { return s.Server != nil && f(s.Server) })
	}
	slot := has(func(v *view.View) bool { return v.PromptTPS != nil || v.OutputTPS != nil })
	if slot {
		head = append(head, "out tok srv/cli", "slot tok/s prompt/out")
	}
	sampled := has(func(v *view.View) bool { return len(v.Samples) > 0 })
	if sampled {
		head = append(head, "gauge peaks run/wait/kv % (samples)")
	}
	url, server := "", metrics.ServerUnknown
	for _, s := range sums {
		v := s.Server
		if v == nil || v.Requests == nil && v.TTFT == nil && v.E2E == nil && v.OutputTokens == nil {
			continue
		}
		url, server = v.URL, v.Server
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
		if slot {
			line = append(line, fmt.Sprintf("%s/%d", fnum(v.OutputTokens), s.TotalOutputTokens), num(v.PromptTPS, 1)+"/"+num(v.OutputTPS, 1))
		}
		if sampled {
			line = append(line, peaks(v.Samples))
		}
		lines = append(lines, line)
	}
	who := url
	if server != metrics.ServerUnknown {
		who = string(server) + " at " + url
	}
	legend = "The server's own view (" + who + ", Δ over each run): "
	switch server {
	case metrics.ServerLlamaCpp:
		legend += "llama.cpp counts tokens and seconds, no latency (its timings of each response hold those)."
	case metrics.ServerTGI:
		legend += "Δ = client − server mean E2E, " + metricsContains(server, "e2e_s") + "."
	default:
		legend += "Δ = client − server mean TTFT, " + metricsContains(server, "ttft_s") + "."
	}
	if server != metrics.ServerLlamaCpp {
		legend += " A server percentile is what its buckets and exact mean allow: \"v [lo, hi]\" the histogram_quantile point with the interval the counts and the sum leave," +
			" \"≤ hi\", \"(lo, hi]\" or \"[lo, hi]\" where they leave no point, \"≥ lo\" past the last bucket."
	}
	if slot {
		legend += " Slot tok/s are llama.cpp's per-slot speeds from its counters, the output per decode step."
	}
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

// spct is a server percentile in milliseconds as its Format writes it:
// the point only where the buckets and the mean allow one.
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
	return p.Format(1000, 3)
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
	// "tgi"; "mixed" for several); Requests how many requests did.
	Source   string `json:"source"`
	Requests int    `json:"requests"`
	// The durations each server reports, in seconds; null where none of
	// the requests had one. Total is the server's whole time for a
	// request: Ollama's total_duration, TGI's x-total-time, and for
	// llama.cpp prompt_ms + predicted_ms (from a slot taking the prompt
	// to the last token).
	Queue     *Quantiles `json:"queue_s,omitempty"`
	Load      *Quantiles `json:"load_s,omitempty"`
	Prefill   *Quantiles `json:"prefill_s,omitempty"`
	Decode    *Quantiles `json:"decode_s,omitempty"`
	Inference *Quantiles `json:"inference_s,omitempty"`
	Total     *Quantiles `json:"total_s,omitempty"`
	// FirstToken is queue + load + prefill per request, the server's
	// share of the client's TTFT (llama.cpp's prompt_ms ends with the
	// first token sampled); DecodePerToken is decode / (n − 1), the
	// server's TPOT (llama.cpp's predicted_ms and Ollama's eval_duration
	// both run from the first sampled token to the last).
	FirstToken     *Quantiles `json:"first_token_s,omitempty"`
	DecodePerToken *Quantiles `json:"decode_per_token_s,omitempty"`
	// QueueEstimate is, for llama.cpp, an estimate of each request's wait
	// for a free slot, which none of its timings holds (prompt_ms starts
	// when a slot takes the prompt): the request's TTFTBeyondServerS
	// (client TTFT − prompt_ms: the wait, the chat template and
	// tokenization, the HTTP path), or where the run did not stream its
	// E2EBeyondServerS (client E2E − prompt_ms − predicted_ms), less
	// HTTPPathEstimate, the smallest of them in the run, taken as the path
	// of a request that did not wait. A run in which every request waited
	// (a sustained overload) makes each estimate low by the least wait.
	// Per request, the wait is its ttft_beyond_server_s (or
	// e2e_beyond_server_s) less http_path_est_s. Null for other servers:
	// Ollama's prompt_eval_duration holds its slot wait, TGI reports its
	// queue.
	QueueEstimate    *Quantiles `json:"queue_est_s,omitempty"`
	HTTPPathEstimate *float64   `json:"http_path_est_s,omitempty"`
	// Beside sets the server's means beside the client's.
	Beside []view.Comparison `json:"beside_client,omitempty"`
}

// The sources of engine.ServerStats.
const (
	sourceLlamaCpp = "llama.cpp"
	sourceOllama   = "ollama"
	sourceTGI      = "tgi"
)

// What a difference between the client's per-request figure and the
// server's own holds, by the server that timed it.
const (
	containsLlamaTTFT  = "the wait for a free slot (llama.cpp's prompt_ms starts when a slot takes the prompt: a deferred request's wait is in no timing), the chat template and tokenization, and the HTTP request and response path and the network"
	containsLlamaE2E   = "the wait for a free slot (in no llama.cpp timing), the chat template and tokenization, and the HTTP request and response path and the network: its E2E is prompt_ms + predicted_ms"
	containsOllamaTTFT = "the HTTP request and response path and the network, and Ollama's work before its runner's clock (the chat template, scheduling the runner): its prompt_eval_duration holds the wait for a parallel slot and the tokenization"
	containsOllamaE2E  = "the HTTP request and response path and the network: Ollama's total_duration is its handler's whole time"
	containsTGIE2EResp = "the HTTP request and response path and the network: TGI's total time holds validation, its queue (x-queue-time) and inference"
	containsFirstToken = "the HTTP request and response path, the network, and what the server does outside its timers (template, tokenization where it is not timed, the first token's detokenization)"
	containsDecodeTok  = "network jitter and read batching, and the server's streaming path"
	containsTotal      = "the HTTP request and response path and the network"
)

// responseContains says what a difference between the client's mean of
// figure ("ttft_s", "tpot_s", "e2e_s") and a per-response mean of source
// holds.
func responseContains(source, figure string) string {
	switch figure {
	case "tpot_s":
		return containsDecodeTok
	case "ttft_s":
		switch source {
		case sourceLlamaCpp:
			return containsLlamaTTFT
		case sourceOllama:
			return containsOllamaTTFT
		}
		return containsFirstToken
	}
	switch source {
	case sourceLlamaCpp:
		return containsLlamaE2E
	case sourceOllama:
		return containsOllamaE2E
	case sourceTGI:
		return containsTGIE2EResp
	}
	return containsTotal
}

// serverFirstToken is the server's own time to a request's first token:
// queue + load + prefill, where its stats time a prefill.
func serverFirstToken(st *engine.ServerStats) (time.Duration, bool) {
	if st == nil || st.Prefill == nil {
		return 0, false
	}
	f := *st.Prefill
	for _, d := range []*time.Duration{st.Queue, st.Load} {
		if d != nil {
			f += *d
		}
	}
	return f, true
}

// serverTotal is the server's whole time for a request: its Total, else
// for llama.cpp prompt_ms + predicted_ms.
func serverTotal(st *engine.ServerStats) *time.Duration {
	if st.Total != nil || st.Source != sourceLlamaCpp || st.Prefill == nil || st.Decode == nil {
		return st.Total
	}
	d := *st.Prefill + *st.Decode
	return &d
}

// responseTimings summarises the completed requests' per-response
// server timings; nil when none carried any.
func responseTimings(reqs []Request, s Summary) *ResponseTimings {
	var rt ResponseTimings
	var queue, load, prefill, decode, inference, total, first, perTok, beyondTTFT, beyondE2E []float64
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
		add(&total, serverTotal(st))
		if f, ok := serverFirstToken(st); ok {
			first = append(first, f.Seconds())
		}
		if st.Decode != nil && st.GenerationTokens >= 2 {
			perTok = append(perTok, st.Decode.Seconds()/float64(st.GenerationTokens-1))
		}
		if r.TTFTBeyondServerS != nil {
			beyondTTFT = append(beyondTTFT, *r.TTFTBeyondServerS)
		}
		if r.E2EBeyondServerS != nil {
			beyondE2E = append(beyondE2E, *r.E2EBeyondServerS)
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
	// One span for the whole run: the first token's where every timed
	// request has it, else the whole request's.
	beyond := beyondTTFT
	if len(beyond) < rt.Requests {
		beyond = beyondE2E
	}
	if rt.Source == sourceLlamaCpp && len(beyond) == rt.Requests {
		path := slices.Min(beyond)
		wait := make([]float64, len(beyond))
		for i, b := range beyond {
			wait[i] = b - path
		}
		rt.HTTPPathEstimate, rt.QueueEstimate = &path, q(wait)
	}
	beside := func(name string, client *float64, server *Quantiles) {
		if client == nil || server == nil || server.Mean == nil {
			return
		}
		rt.Beside = append(rt.Beside, view.Comparison{Figure: name, Client: *client, Server: *server.Mean,
			Difference: *client - *server.Mean, Contains: responseContains(rt.Source, name)})
	}
	beside("ttft_s", s.TTFT.Mean, rt.FirstToken)
	beside("tpot_s", s.TPOT.Mean, rt.DecodePerToken)
	beside("e2e_s", s.E2E.Mean, rt.Total)
	return &rt
}

// responseGrid is the table of the servers' per-response timings beside
// the client's, one line per run that has them.
func responseGrid(sums []Summary) (head []string, lines [][]string, legend string) {
	head = []string{"traffic", "reqs timed/ok", "ttft ms mean cli/srv/Δ", "srv prefill ms mean; p99", "srv queue+load ms mean; p99", "tpot ms mean cli/srv", "srv decode ms mean", "e2e ms mean cli/srv/Δ"}
	src, estimated := "", false
	qmean := func(q *Quantiles) *float64 {
		if q == nil {
			return nil
		}
		return q.Mean
	}
	p99 := func(q *Quantiles) *float64 {
		if q == nil {
			return nil
		}
		return q.P99
	}
	diff := func(c, sv *float64) string {
		if c == nil || sv == nil {
			return "-"
		}
		return fmt.Sprintf("%+.2f", (*c-*sv)*1000)
	}
	for _, s := range sums {
		rt := s.Responses
		if rt == nil {
			continue
		}
		src = rt.Source
		var wait, waitP99 *float64
		for _, q := range []*Quantiles{rt.Queue, rt.Load} {
			if m := qmean(q); m != nil {
				w := *m
				if wait != nil {
					w += *wait
				}
				wait = &w
			}
		}
		if rt.Queue != nil && rt.Load == nil {
			waitP99 = p99(rt.Queue)
		}
		waits := cms(wait) + "; " + cms(waitP99)
		if wait == nil && rt.QueueEstimate != nil {
			waits, estimated = "~"+cms(qmean(rt.QueueEstimate))+"; ~"+cms(p99(rt.QueueEstimate)), true
		}
		lines = append(lines, []string{
			s.Traffic,
			fmt.Sprintf("%d/%d", rt.Requests, s.Completed),
			cms(s.TTFT.Mean) + "/" + cms(qmean(rt.FirstToken)) + "/" + diff(s.TTFT.Mean, qmean(rt.FirstToken)),
			cms(qmean(rt.Prefill)) + "; " + cms(p99(rt.Prefill)),
			waits,
			cms(s.TPOT.Mean) + "/" + cms(qmean(rt.DecodePerToken)),
			cms(qmean(rt.Decode)),
			cms(s.E2E.Mean) + "/" + cms(qmean(rt.Total)) + "/" + diff(s.E2E.Mean, qmean(rt.Total)),
		})
	}
	legend = "The server's own timings of each response (" + src + "): " + responseWhat(src) +
		"; Δ = client − server, " + responseContains(src, "ttft_s") + "."
	if estimated {
		legend += " ~ marks the wait for a slot estimated per request: its TTFT Δ (its E2E Δ, unstreamed) less the run's smallest, the HTTP path of a request that did not wait."
	}
	return head, lines, legend
}

// responseWhat says how a source's timings make the grid's server
// figures.
func responseWhat(source string) string {
	switch source {
	case sourceLlamaCpp:
		return "its first token is prompt_ms, from a slot taking the prompt to the first token; its TPOT predicted_ms / (n − 1); its E2E prompt_ms + predicted_ms"
	case sourceOllama:
		return "its first token is load + prompt_eval_duration; its TPOT eval_duration / (n − 1); its E2E total_duration"
	case sourceTGI:
		return "its queue is x-queue-time; its E2E x-total-time"
	}
	return "its first token is queue + load + prefill; its TPOT decode / (n − 1)"
}

// WriteServerView writes the server's own view of the summary's run
// beside the client's, as the load table's server columns do, in lines
// for a program that prints one run as text: the /metrics window (Server)
// and the per-response timings (Responses), each with what it lacks, and
// the server view's warnings ("server metrics: …"), which the summary's
// Warnings do not repeat. It writes nothing when the summary has neither.
func (s Summary) WriteServerView(w io.Writer) error {
	var b strings.Builder
	for _, grid := range serverGrids {
		head, lines, legend := grid([]Summary{s})
		if len(lines) == 0 {
			continue
		}
		b.WriteString(legend + "\n")
		for i, h := range head[1:] {
			// A line with no figure at all ("-; -") says nothing.
			if v := lines[0][i+1]; strings.ContainsAny(v, "0123456789") {
				fmt.Fprintf(&b, "  %-28s %s\n", h, v)
			}
		}
	}
	if v := s.Server; v != nil {
		for _, wn := range v.Warnings {
			b.WriteString(serverNote + wn + "\n")
		}
	}
	_, err := io.WriteString(w, wrapText(b.String()))
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
