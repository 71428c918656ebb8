package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
)

// benchResp is the part of a non-streaming bench response the tests read.
type benchResp struct {
	ID      string `json:"id"`
	Choices []struct {
		FinishReason string `json:"finish_reason"`
		Message      struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	GenerationStats *struct {
		PromptTPS        float64          `json:"prompt_tps"`
		GenerationTPS    float64          `json:"generation_tps"`
		PromptTokens     int              `json:"prompt_tokens"`
		GenerationTokens int              `json:"generation_tokens"`
		PeakMemoryUsage  map[string]int64 `json:"peak_memory_usage"`
		PrefixCacheHit   string           `json:"prefix_cache_hit"`
	} `json:"generation_stats"`
	PowerUsage *struct {
		ElapsedSeconds    float64 `json:"elapsed_seconds"`
		TotalEnergyJoules float64 `json:"total_energy_joules"`
		PrefillSeconds    float64 `json:"prefill_seconds"`
		PrefillEnergy     float64 `json:"prefill_energy_joules"`
		GenerationEnergy  float64 `json:"generation_energy_joules"`
		Nodes             []struct {
			NodeID      string  `json:"node_id"`
			AvgSysPower float64 `json:"avg_sys_power"`
		} `json:"nodes"`
	} `json:"power_usage"`
	Sim struct {
		ArrivalS      float64 `json:"arrival_s"`
		PrefillStartS float64 `json:"prefill_start_s"`
		PrefillEndS   float64 `json:"prefill_end_s"`
		FirstTokenS   float64 `json:"first_token_s"`
		LastTokenS    float64 `json:"last_token_s"`
		MaxBatch      int     `json:"max_batch"`
		CachedTokens  int     `json:"cached_tokens"`
		RemotePrefill bool    `json:"remote_prefill"`
		InstanceID    string  `json:"instance_id"`
	} `json:"sim"`
}

func newFast(t *testing.T, o Options) *Server {
	t.Helper()
	o.Preset = Fast()
	s := NewServer(o)
	t.Cleanup(s.Close)
	return s
}

// prompt returns a user message of n "a " atoms: n + 1 built-in tokens
// ("a", n − 1 × " a", and the trailing " ").
func prompt(n int) string { return strings.Repeat("a ", n) }

func chatBody(model, content string, maxTokens int, extra string) string {
	c, _ := json.Marshal(content)
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%s}],"max_tokens":%d%s}`, model, c, maxTokens, extra)
}

func post(t *testing.T, url, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := testkit.Client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp
}

func bench(t *testing.T, s *Server, content string, maxTokens int, extra string) benchResp {
	t.Helper()
	r, err := benchErr(s, content, maxTokens, extra)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// benchErr sends a non-streaming bench request; it is safe in goroutines
// other than the test's.
func benchErr(s *Server, content string, maxTokens int, extra string) (benchResp, error) {
	var r benchResp
	resp, err := testkit.Client.Post(s.URL+"/bench/chat/completions", "application/json", strings.NewReader(chatBody(s.Model(), content, maxTokens, extra)))
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return r, fmt.Errorf("bench: status %d: %s", resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("bench: %v in %s", err, b)
	}
	return r, nil
}

// sseLines reads a stream and returns its non-empty lines.
func sseLines(t *testing.T, r io.Reader) ([]string, error) {
	t.Helper()
	br := bufio.NewReaderSize(r, 1<<16)
	var lines []string
	for {
		l, err := br.ReadString('\n')
		if l = strings.TrimRight(l, "\n"); l != "" {
			lines = append(lines, l)
		}
		if err == io.EOF {
			return lines, nil
		}
		if err != nil {
			return lines, err
		}
	}
}

func TestBenchRatesFollowFormula(t *testing.T) {
	s := newFast(t, Options{})
	p := s.Preset()
	for _, tc := range []struct{ atoms, tg int }{{10, 8}, {3000, 12}, {5000, 4}} {
		r := bench(t, s, prompt(tc.atoms), tc.tg, "")
		st := r.GenerationStats
		pp := GenerationPromptTokens + MessageOverheadTokens + tc.atoms + 1 // "a", " a"×(n−1), " "
		if st.PromptTokens != pp || st.GenerationTokens != tc.tg {
			t.Fatalf("prompt_tokens, generation_tokens = %d, %d; want %d, %d", st.PromptTokens, st.GenerationTokens, pp, tc.tg)
		}
		wantPrompt := float64(pp-1) / handPrefill(p, pp-1, 0, DefaultPrefillChunk)
		if !within(st.PromptTPS, wantPrompt, 0.02) {
			t.Errorf("pp=%d: prompt_tps = %.1f, formula gives %.1f", pp, st.PromptTPS, wantPrompt)
		}
		// Decode step i (i ≥ 1) runs with pp-1+i tokens of context.
		span := 0.0
		for i := 1; i < tc.tg; i++ {
			span += handDecodeStep(p, 1, pp-1+i)
		}
		wantGen := float64(tc.tg-1) / span
		if !within(st.GenerationTPS, wantGen, 0.02) {
			t.Errorf("pp=%d: generation_tps = %.2f, formula gives %.2f", pp, st.GenerationTPS, wantGen)
		}
		if got := len(Tokenize(r.Choices[0].Message.Content)); got != tc.tg {
			t.Errorf("text has %d tokens, want %d", got, tc.tg)
		}
		if r.Choices[0].FinishReason != "length" {
			t.Errorf("finish_reason = %q, want length", r.Choices[0].FinishReason)
		}
		pu := r.PowerUsage
		if len(pu.Nodes) != DefaultNodes || !within(pu.PrefillEnergy+pu.GenerationEnergy, pu.TotalEnergyJoules, 1e-9) {
			t.Errorf("power_usage: %d nodes, prefill+generation = %g J, total %g J", len(pu.Nodes), pu.PrefillEnergy+pu.GenerationEnergy, pu.TotalEnergyJoules)
		}
		// Energy by hand: every node idles throughout; the serving node
		// adds ComputeWatts · t_compute + MemoryWatts · t_memory per step.
		hw, m := p.Hardware, p.Model
		dyn := func(mem, comp float64) float64 { return hw.ComputeWatts*comp + hw.MemoryWatts*mem }
		kv := 2 * float64(m.Layers*m.KVHeads*m.HeadDim) * m.KVBytesPerElement
		decodeDyn := func(ctx int) float64 {
			return dyn((m.WeightBytes()+kv*float64(ctx))/hw.MemoryBandwidth, 2*m.Params/hw.FLOPS)
		}
		idle := float64(DefaultNodes) * hw.IdleWatts
		wantGenE := idle * (r.Sim.LastTokenS - r.Sim.FirstTokenS)
		for i := 1; i < tc.tg; i++ {
			wantGenE += decodeDyn(pp - 1 + i)
		}
		wantPreE := idle*(r.Sim.FirstTokenS-r.Sim.ArrivalS) + decodeDyn(pp-1)
		a := 4 * float64(m.Layers*m.Heads*m.HeadDim)
		for done := 0; done < pp-1; done += DefaultPrefillChunk {
			n, o := float64(min(DefaultPrefillChunk, pp-1-done)), float64(done)
			wantPreE += dyn((m.WeightBytes()+kv*o)/hw.MemoryBandwidth, (2*m.Params*n+a*(n*o+n*(n+1)/2))/hw.FLOPS)
		}
		if !within(pu.GenerationEnergy, wantGenE, 1e-3) || !within(pu.PrefillEnergy, wantPreE, 1e-3) {
			t.Errorf("pp=%d: prefill, generation energy = %.6f, %.6f J; by hand %.6f, %.6f J", pp, pu.PrefillEnergy, pu.GenerationEnergy, wantPreE, wantGenE)
		}
		if !within(pu.ElapsedSeconds, r.Sim.LastTokenS-r.Sim.ArrivalS, 1e-6) || !within(pu.PrefillSeconds, r.Sim.FirstTokenS-r.Sim.ArrivalS, 1e-6) {
			t.Errorf("power_usage window %g s (prefill %g s) is not arrival → first → last token", pu.ElapsedSeconds, pu.PrefillSeconds)
		}
	}
}

// gatedServer returns a Fast server whose one instance loads for delay:
// requests sent meanwhile queue, and the scheduler admits them together
// once it is ready.
func gatedServer(t *testing.T, delay time.Duration) *Server {
	t.Helper()
	s := newFast(t, Options{NoInstance: true, LoadDelay: delay})
	inst, _, _ := firstPreview(t, s, s.Model(), "Pipeline", 1)
	resp := post(t, s.URL+"/instance", `{"instance":`+string(inst)+`}`)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST /instance: %d", resp.StatusCode)
	}
	return s
}

// TestConcurrencyBatches sends c requests together and compares c = 8
// with c = 1 on the schedule the sim reports, from the admission of the
// batch to its last token. The requests go to an instance that is still
// loading, so they are all queued before the scheduler admits them: they
// run as one batch however slowly a loaded machine sends them. An attempt
// in which a request arrived after the admission is discarded and made
// again with a longer load.
func TestConcurrencyBatches(t *testing.T) {
	const tg = 128
	run := func(c int) (agg float64, perReq float64) {
		for delay := 500 * time.Millisecond; ; delay *= 2 {
			if delay > 16*time.Second {
				t.Fatalf("%d requests never all arrived while the instance loaded", c)
			}
			s := gatedServer(t, delay)
			var wg sync.WaitGroup
			res := make([]benchResp, c)
			for i := range c {
				wg.Go(func() {
					var err error
					if res[i], err = benchErr(s, prompt(20+i), tg, ""); err != nil {
						t.Error(err)
					}
				})
			}
			testkit.WaitWithin(t, &wg, testkit.Patience)
			if t.Failed() {
				t.FailNow()
			}
			admitted, lastArrival, last := res[0].Sim.PrefillStartS, res[0].Sim.ArrivalS, res[0].Sim.LastTokenS
			perReq = 0
			for _, r := range res {
				admitted, lastArrival, last = min(admitted, r.Sim.PrefillStartS), max(lastArrival, r.Sim.ArrivalS), max(last, r.Sim.LastTokenS)
				perReq += r.GenerationStats.GenerationTPS / float64(c)
			}
			s.Close()
			if lastArrival < admitted {
				return float64(c*tg) / (last - admitted), perReq
			}
			t.Logf("a request arrived %.3f s after the batch was admitted; again with a %v load", lastArrival-admitted, 2*delay)
		}
	}
	agg1, per1 := run(1)
	agg8, per8 := run(8)
	if agg8 <= 4*agg1 {
		t.Errorf("aggregate throughput at concurrency 8 = %.0f tok/s, at 1 = %.0f: expected more than 4×", agg8, agg1)
	}
	if per8 >= per1 {
		t.Errorf("mean per-request generation_tps at concurrency 8 = %.1f, at 1 = %.1f: expected it to fall", per8, per1)
	}
}

func TestMaxRunningQueues(t *testing.T) {
	s := newFast(t, Options{MaxRunning: 2})
	var wg sync.WaitGroup
	res := make([]benchResp, 4)
	for i := range res {
		wg.Go(func() {
			var err error
			if res[i], err = benchErr(s, prompt(5+i), 20, ""); err != nil {
				t.Error(err)
			}
		})
	}
	testkit.WaitWithin(t, &wg, testkit.Patience)
	for i, r := range res {
		if r.Sim.MaxBatch > 2 {
			t.Errorf("request %d ran in a batch of %d, cap is 2", i, r.Sim.MaxBatch)
		}
	}
}

func TestV1StopsEarlyDeterministically(t *testing.T) {
	s := newFast(t, Options{NaturalLength: 8})
	counts := map[int]int{}
	early := 0
	for i := range 12 {
		var lens []int
		for range 2 {
			resp := post(t, s.URL+"/v1/chat/completions", chatBody(s.Model(), fmt.Sprintf("prompt %d", i), 6, ""))
			var r struct {
				Choices []struct {
					FinishReason string `json:"finish_reason"`
					Message      struct{ Content string }
				}
				Usage struct {
					CompletionTokens int `json:"completion_tokens"`
				}
			}
			json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			n := r.Usage.CompletionTokens
			lens = append(lens, n)
			if want := map[bool]string{true: "stop", false: "length"}[n < 6]; r.Choices[0].FinishReason != want {
				t.Errorf("prompt %d: %d tokens with finish_reason %q, want %q", i, n, r.Choices[0].FinishReason, want)
			}
		}
		if lens[0] != lens[1] {
			t.Errorf("prompt %d: %d then %d tokens: expected the same length every time", i, lens[0], lens[1])
		}
		counts[lens[0]]++
		if lens[0] < 6 {
			early++
		}
	}
	// L is uniform over 1..8, so with max_tokens 6 about a quarter run to
	// the limit; 12 prompts all stopping early or none would be a bug.
	if early == 0 || early == 12 {
		t.Errorf("%d of 12 requests stopped early (lengths %v): expected some but not all", early, counts)
	}
}

func TestPrefixCacheHits(t *testing.T) {
	s := newFast(t, Options{})
	use := `,"use_prefix_cache":true`
	steps := []struct {
		atoms int
		extra string
		want  string
	}{
		{100, "", HitNone},  // cache off: no lookup, no save
		{100, "", HitNone},  // still off
		{100, use, HitNone}, // first cached request
		{100, use, HitExact},
		{400, use, HitPartial}, // larger pp after smaller: same prefix
		{400, use, HitExact},
		{50, use, HitPartial}, // smaller: a strict prefix of a cached prompt
		{400, "", HitNone},
	}
	for i, st := range steps {
		r := bench(t, s, prompt(st.atoms), 4, st.extra)
		if got := r.GenerationStats.PrefixCacheHit; got != st.want {
			t.Errorf("step %d (pp atoms %d%s): prefix_cache_hit = %q, want %q", i, st.atoms, st.extra, got, st.want)
		}
		if st.want == HitNone && r.Sim.CachedTokens != 0 {
			t.Errorf("step %d: %d cached tokens on a miss", i, r.Sim.CachedTokens)
		}
	}
	// An exact hit reports the rate stored with the entry.
	a := bench(t, s, prompt(700), 4, use)
	b := bench(t, s, prompt(700), 4, use)
	if b.GenerationStats.PrefixCacheHit != HitExact || b.GenerationStats.PromptTPS != a.GenerationStats.PromptTPS {
		t.Errorf("exact hit: %q with prompt_tps %g, want exact with the stored %g", b.GenerationStats.PrefixCacheHit, b.GenerationStats.PromptTPS, a.GenerationStats.PromptTPS)
	}
}

func TestStreamExo(t *testing.T) {
	s := newFast(t, Options{PrefillChunk: 512})
	resp := post(t, s.URL+"/bench/chat/completions", chatBody(s.Model(), prompt(1100), 7, `,"stream":true`))
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	if h := resp.Header.Get(SimHeader); !strings.HasPrefix(h, "simulated") {
		t.Errorf("%s = %q: expected the simulated label", SimHeader, h)
	}
	lines, err := sseLines(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	tokens := 0
	var stats map[string]any
	for _, l := range lines {
		switch {
		case l == ": keep-alive":
			kinds = append(kinds, "keep-alive")
		case strings.HasPrefix(l, ": prefill_progress "):
			kinds = append(kinds, "progress")
		case strings.HasPrefix(l, ": generation_stats "):
			kinds = append(kinds, "stats")
			json.Unmarshal([]byte(strings.TrimPrefix(l, ": generation_stats ")), &stats)
		case strings.HasPrefix(l, ": sim "):
			kinds = append(kinds, "sim")
		case l == "data: [DONE]":
			kinds = append(kinds, "done")
		case strings.HasPrefix(l, "data: "):
			var c struct {
				Object  string
				Choices []struct {
					Delta struct{ Role, Content string }
				}
			}
			if err := json.Unmarshal([]byte(l[6:]), &c); err != nil {
				t.Fatalf("chunk %q: %v", l, err)
			}
			if c.Object != "chat.completion" || c.Choices[0].Delta.Role != "assistant" {
				t.Errorf("chunk %q: want object chat.completion and role assistant on every delta", l)
			}
			tokens++
			if len(kinds) == 0 || kinds[len(kinds)-1] != "data" {
				kinds = append(kinds, "data")
			}
		}
	}
	// pp = 3 + 5 + 1101 = 1109: 1108 tokens in chunks of 512 → 3 progress lines.
	want := []string{"keep-alive", "progress", "progress", "progress", "data", "stats", "sim", "done"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("line kinds (-want +got):\n%s", diff)
	}
	if tokens != 7 {
		t.Errorf("%d data chunks, want 7", tokens)
	}
	if mem, ok := stats["peak_memory_usage"].(map[string]any); !ok || mem["in_bytes"] == nil {
		t.Errorf("generation_stats peak_memory_usage = %v: want in_bytes in a stream", stats["peak_memory_usage"])
	}
}

func TestKeepAliveDuringLongPrefill(t *testing.T) {
	// A 1000-token prompt prefills in one chunk for about 1.4 s of
	// schedule with no output on the M4 Max preset; a 15 ms keep-alive
	// period must fill the silence. The silence is a hundred periods long,
	// so the handler finds a tick in it even when a loaded machine runs it
	// late, or the scheduler runs behind the schedule.
	s := NewServer(Options{Preset: M4MaxLlama8B(), KeepAlive: 15 * time.Millisecond})
	t.Cleanup(s.Close)
	p := s.Preset().PrefillTime(1000, 0, 0)
	if p < 50*s.opts.keepAlive() {
		t.Fatalf("prefill of 1000 tokens takes %v: the test needs one of at least fifty keep-alive periods", p)
	}
	resp := post(t, s.URL+"/bench/chat/completions", chatBody(s.Model(), prompt(1000), 2, `,"stream":true`))
	defer resp.Body.Close()
	lines, _ := sseLines(t, resp.Body)
	n := 0
	for _, l := range lines {
		if l == ": keep-alive" {
			n++
		}
	}
	if n < 2 {
		t.Errorf("%d keep-alive lines over a %v prefill with a 15 ms period: want the first and at least one more", n, p)
	}
}

func TestStopStrings(t *testing.T) {
	s := newFast(t, Options{})
	// The bench text for seed 42; find a word inside it to stop at.
	full := bench(t, s, "hi", 12, "").Choices[0].Message.Content
	words := strings.Fields(full)
	stop := " " + words[5]
	at := strings.Index(full, stop)
	wantTokens := len(Tokenize(full[:at+len(stop)]))
	sb, _ := json.Marshal(stop)
	r := bench(t, s, "hi", 12, `,"stop":[`+string(sb)+`]`)
	if got := r.Choices[0].Message.Content; got != full[:at] || r.Choices[0].FinishReason != "stop" {
		t.Errorf("with stop %q: text %q, %q; want %q, stop", stop, got, r.Choices[0].FinishReason, full[:at])
	}
	if r.GenerationStats.GenerationTokens != wantTokens {
		t.Errorf("generation_tokens = %d, want %d (the tokens up to the stop string)", r.GenerationStats.GenerationTokens, wantTokens)
	}
	// Streamed, the chunks add up to the same text.
	resp := post(t, s.URL+"/bench/chat/completions", chatBody(s.Model(), "hi", 12, `,"stream":true,"stop":`+string(sb)))
	lines, _ := sseLines(t, resp.Body)
	resp.Body.Close()
	var got strings.Builder
	for _, l := range lines {
		if strings.HasPrefix(l, "data: {") {
			var c struct {
				Choices []struct{ Delta struct{ Content string } }
			}
			json.Unmarshal([]byte(l[6:]), &c)
			got.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if got.String() != full[:at] {
		t.Errorf("streamed text %q, want %q", got.String(), full[:at])
	}
}

func TestStreamChunking(t *testing.T) {
	s := newFast(t, Options{StreamChunk: 3})
	resp := post(t, s.URL+"/bench/chat/completions", chatBody(s.Model(), "hi", 8, `,"stream":true`))
	defer resp.Body.Close()
	lines, _ := sseLines(t, resp.Body)
	var sizes []int
	for _, l := range lines {
		if strings.HasPrefix(l, "data: {") {
			var c struct {
				Choices []struct{ Delta struct{ Content string } }
			}
			json.Unmarshal([]byte(l[6:]), &c)
			sizes = append(sizes, len(Tokenize(c.Choices[0].Delta.Content)))
		}
	}
	if diff := cmp.Diff([]int{3, 3, 2}, sizes); diff != "" {
		t.Errorf("tokens per chunk (-want +got):\n%s", diff)
	}
}

func TestVLLMStream(t *testing.T) {
	s := newFast(t, Options{NaturalLength: 3})
	body := chatBody(s.Model(), "hello there", 5, `,"stream":true,"ignore_eos":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}`)
	resp := post(t, s.VLLMURL+"/v1/chat/completions", body)
	defer resp.Body.Close()
	lines, _ := sseLines(t, resp.Body)
	var completion []int
	var finish []string
	emptyChoices := 0
	for _, l := range lines {
		if !strings.HasPrefix(l, "data: {") {
			continue
		}
		var c struct {
			Object  string
			Choices []struct {
				FinishReason *string `json:"finish_reason"`
			}
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		json.Unmarshal([]byte(l[6:]), &c)
		if c.Object != "chat.completion.chunk" || c.Usage == nil {
			t.Fatalf("chunk %s: want chat.completion.chunk with usage", l)
		}
		completion = append(completion, c.Usage.CompletionTokens)
		if len(c.Choices) == 0 {
			emptyChoices++
		} else if c.Choices[0].FinishReason != nil {
			finish = append(finish, *c.Choices[0].FinishReason)
		}
	}
	// Role chunk, 5 token chunks, final usage chunk.
	if diff := cmp.Diff([]int{0, 1, 2, 3, 4, 5, 5}, completion); diff != "" {
		t.Errorf("completion_tokens per chunk (-want +got):\n%s", diff)
	}
	if emptyChoices != 1 || !cmp.Equal(finish, []string{"length"}) || lines[len(lines)-1] != "data: [DONE]" {
		t.Errorf("final: %d usage-only chunks, finish reasons %v, last line %q", emptyChoices, finish, lines[len(lines)-1])
	}
	// Without ignore_eos, min_tokens holds EOS back: L ≤ 3 < min_tokens.
	resp2 := post(t, s.VLLMURL+"/v1/chat/completions", chatBody(s.Model(), "hello there", 10, `,"min_tokens":6`))
	var r struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	json.NewDecoder(resp2.Body).Decode(&r)
	resp2.Body.Close()
	if r.Usage.CompletionTokens != 6 || r.Choices[0].FinishReason != "stop" {
		t.Errorf("min_tokens 6: %d tokens, %q; want 6, stop", r.Usage.CompletionTokens, r.Choices[0].FinishReason)
	}
}

func TestVLLMMaxCompletionTokens(t *testing.T) {
	s := newFast(t, Options{})
	resp := post(t, s.VLLMURL+"/v1/chat/completions", chatBody(s.Model(), "hi", 9, `,"max_completion_tokens":3,"ignore_eos":true`))
	var r struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if r.Usage.CompletionTokens != 3 {
		t.Errorf("max_completion_tokens 3 beside max_tokens 9: %d tokens, want 3", r.Usage.CompletionTokens)
	}
	// Over the context length: vLLM's 400.
	resp = post(t, s.VLLMURL+"/v1/chat/completions", chatBody(s.Model(), "hi", Fast().Model.ContextLength, ""))
	var e errorBody
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(e.Error.Message, "maximum context length is 32768 tokens") {
		t.Errorf("over-long request: %d %q", resp.StatusCode, e.Error.Message)
	}
}

func TestZeroOptions(t *testing.T) {
	s := NewServer(Options{})
	defer s.Close()
	if s.Preset().Name != M3UltraGemma27B().Name {
		t.Fatalf("zero Options serve %s, want the M3 Ultra preset", s.Preset().Name)
	}
	r := bench(t, s, "hi", 2, "")
	p := s.Preset()
	// One decode interval at context pp − 1 + 1 on the M3 Ultra.
	pp := GenerationPromptTokens + MessageOverheadTokens + 1
	if want := 1 / handDecodeStep(p, 1, pp); !within(r.GenerationStats.GenerationTPS, want, 0.02) {
		t.Errorf("generation_tps = %.2f, formula gives %.2f", r.GenerationStats.GenerationTPS, want)
	}
	var nodes map[string]any
	getJSON(t, s.URL+"/state/nodeIdentities", &nodes)
	if len(nodes) != DefaultNodes {
		t.Errorf("%d nodes, want %d", len(nodes), DefaultNodes)
	}
}

func TestTokenizeMatchesCounter(t *testing.T) {
	s := newFast(t, Options{})
	msgs := []promptsize.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello, world! 12345678901234567890"}}
	want, err := s.Counter().Count(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	// 3 + (5 + 3) + (5 + 6): "Be" " brief" "."; "Hello" "," " world" "!" " 123456789012" "34567890".
	if want != 22 {
		t.Fatalf("Counter = %d, hand count 22", want)
	}
	mb, _ := json.Marshal(msgs)
	for _, url := range []string{s.URL + "/tokenize", s.VLLMURL + "/tokenize"} {
		resp := post(t, url, fmt.Sprintf(`{"model":%q,"messages":%s,"add_generation_prompt":true}`, s.Model(), mb))
		var r struct {
			Count       int   `json:"count"`
			MaxModelLen int   `json:"max_model_len"`
			Tokens      []int `json:"tokens"`
		}
		json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if r.Count != want || len(r.Tokens) != want || r.MaxModelLen != s.Preset().Model.ContextLength {
			t.Errorf("%s: count %d, %d tokens, max_model_len %d; want %d", url, r.Count, len(r.Tokens), r.MaxModelLen, want)
		}
	}
	resp := post(t, s.VLLMURL+"/tokenize", `{"prompt":"a b c"}`)
	var r struct{ Count int }
	json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if r.Count != 3 {
		t.Errorf("prompt tokenize count = %d, want 3", r.Count)
	}
	// The server's prompt_tokens are the Counter's.
	b := bench(t, s, "Hello, world!", 2, "")
	if got := b.GenerationStats.PromptTokens; got != 3+5+4 {
		t.Errorf("prompt_tokens = %d, want 12", got)
	}
}

func TestCustomCounter(t *testing.T) {
	c := promptsize.CounterFunc(func(ctx context.Context, m []promptsize.Message) (int, error) { return 1000, nil })
	s := newFast(t, Options{Counter: c})
	if got := bench(t, s, "x", 2, "").GenerationStats.PromptTokens; got != 1000 {
		t.Errorf("prompt_tokens = %d with a Counter that says 1000", got)
	}
}

func TestCancel(t *testing.T) {
	s := newFast(t, Options{})
	resp := post(t, s.URL+"/bench/chat/completions", chatBody(s.Model(), "hi", 1_000_000, `,"stream":true`))
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var id string
	for id == "" {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(l, "data: {") {
			var c struct{ ID string }
			json.Unmarshal([]byte(l[6:]), &c)
			id = c.ID
		}
	}
	c := post(t, s.URL+"/v1/cancel/"+id, "")
	c.Body.Close()
	if c.StatusCode != 200 {
		t.Fatalf("cancel: status %d", c.StatusCode)
	}
	rest, err := sseLines(t, br)
	if err != nil || len(rest) == 0 || rest[len(rest)-1] != "data: [DONE]" {
		t.Errorf("after cancel: %v, last lines %q: want the stream to end with [DONE]", err, rest[max(len(rest)-2, 0):])
	}
	c = post(t, s.URL+"/v1/cancel/"+id, "")
	c.Body.Close()
	if c.StatusCode != 404 {
		t.Errorf("second cancel: status %d, want 404", c.StatusCode)
	}
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := testkit.Client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		json.NewDecoder(resp.Body).Decode(v)
	}
	return resp.StatusCode
}

func TestStateAndPlacement(t *testing.T) {
	// The instance loads for 2 s, so that the first look at its runner,
	// right after the POST, finds it loading even on a loaded machine.
	s := newFast(t, Options{LoadDelay: 2 * time.Second})
	var sys map[string]float64
	node := "12D3KooWSimNode02"
	if code := getJSON(t, s.URL+"/state/nodeSystem/"+node, &sys); code != 200 {
		t.Fatalf("nodeSystem: %d", code)
	}
	if len(sys) != 5 || sys["sysPower"] != Fast().Hardware.IdleWatts {
		t.Errorf("nodeSystem of an idle node = %v: want exactly 5 fields and idle power", sys)
	}
	var ident map[string]string
	getJSON(t, s.URL+"/state/nodeIdentities/"+node, &ident)
	if !strings.Contains(ident["friendlyName"], "simulated") {
		t.Errorf("friendlyName %q does not say simulated", ident["friendlyName"])
	}
	var disk struct{ Total, Available map[string]int64 }
	getJSON(t, s.URL+"/state/nodeDisk/"+node, &disk)
	if disk.Total["inBytes"] != Fast().Hardware.Disk || disk.Available["inBytes"] <= 0 {
		t.Errorf("nodeDisk = %+v", disk)
	}
	// exo_bench's planning reads the model id of a completed download.
	var dl []map[string]map[string]any
	getJSON(t, s.URL+"/state/downloads/"+node, &dl)
	if len(dl) != 1 || dl[0]["DownloadCompleted"] == nil {
		t.Fatalf("downloads = %v: want one DownloadCompleted", dl)
	}
	var mid string
	getJSON(t, s.URL+"/state/downloads/"+node+"/0/DownloadCompleted/shardMetadata/PipelineShardMetadata/modelCard/modelId", &mid)
	if mid != s.Model() {
		t.Errorf("download's modelCard.modelId = %q, want %q", mid, s.Model())
	}
	var e errorBody
	if code := getJSON(t, s.URL+"/state/nodeSystem/nope/x", &e); code != 404 || e.Error.Message != "unable to find path 'nodeSystem.nope.x' in state json" {
		t.Errorf("missing path: %d %q", code, e.Error.Message)
	}
	var pv struct {
		Previews []struct {
			Sharding string         `json:"sharding"`
			Meta     string         `json:"instance_meta"`
			Instance map[string]any `json:"instance"`
			Error    *string        `json:"error"`
		} `json:"previews"`
	}
	getJSON(t, s.URL+"/instance/previews?model_id="+s.Model(), &pv)
	if len(pv.Previews) != 8 {
		t.Fatalf("%d previews, want 2 shardings × 2 metas × 2 node counts", len(pv.Previews))
	}
	// exo forces one-node placements to ring + pipeline but keeps the
	// requested labels.
	for _, p := range pv.Previews {
		in, ring := p.Instance["MlxRingInstance"].(map[string]any)
		if !ring {
			continue
		}
		sa := in["shardAssignments"].(map[string]any)
		if len(sa["nodeToRunner"].(map[string]any)) != 1 {
			continue
		}
		for _, sh := range sa["runnerToShard"].(map[string]any) {
			if _, ok := sh.(map[string]any)["PipelineShardMetadata"]; !ok {
				t.Errorf("1-node preview labelled %s/%s holds %v: want PipelineShardMetadata", p.Sharding, p.Meta, sh)
			}
		}
	}
	var pv3 struct{ Previews []any }
	s3 := newFast(t, Options{Nodes: 3})
	getJSON(t, s3.URL+"/instance/previews?model_id="+s3.Model(), &pv3)
	// Tensor needs KV heads (4) divisible by the node count: no 3-node
	// tensor placement; an error preview appears only for a (sharding,
	// meta) pair with no placement at all.
	if len(pv3.Previews) != 10 {
		t.Errorf("3 nodes: %d previews, want 3 × 2 pipeline + 2 × 2 tensor = 10", len(pv3.Previews))
	}
	// Create a 2-node tensor instance from the last preview.
	var pick map[string]any
	for _, p := range pv.Previews {
		if p.Sharding == "Tensor" && p.Meta == "MlxJaccl" && p.Error == nil {
			pick = p.Instance
		}
	}
	tagged := pick["MlxJacclInstance"].(map[string]any)
	id := tagged["instanceId"].(string)
	if n := len(tagged["shardAssignments"].(map[string]any)["nodeToRunner"].(map[string]any)); n != 2 {
		t.Fatalf("picked preview has %d nodes", n)
	}
	b, _ := json.Marshal(map[string]any{"instance": pick})
	resp := post(t, s.URL+"/instance", string(b))
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST /instance: %d", resp.StatusCode)
	}
	runners := tagged["shardAssignments"].(map[string]any)["nodeToRunner"].(map[string]any)
	seen := map[string]bool{}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, rid := range runners {
			var st map[string]any
			getJSON(t, s.URL+"/state/runners/"+rid.(string), &st)
			for k := range st {
				seen[k] = true
			}
		}
		if seen["RunnerReady"] {
			break
		}
	}
	if !seen["RunnerLoading"] || !seen["RunnerReady"] {
		t.Errorf("runner states seen %v: want RunnerLoading then RunnerReady", seen)
	}
	resp = post(t, s.URL+"/instance", string(b)) // same id again
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("duplicate instance: %d, want 400", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodDelete, s.URL+"/instance/"+id, nil)
	dr, err := testkit.Client.Do(req)
	if err != nil || dr.StatusCode != 200 {
		t.Fatalf("DELETE: %v %v", err, dr)
	}
	dr.Body.Close()
	if code := getJSON(t, s.URL+"/instance/"+id, nil); code != 404 {
		t.Errorf("GET deleted instance: %d, want 404", code)
	}
}

func TestNoInstanceIs404(t *testing.T) {
	s := newFast(t, Options{NoInstance: true})
	resp := post(t, s.URL+"/bench/chat/completions", chatBody(s.Model(), "hi", 2, ""))
	var e errorBody
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	want := errorBody{errorInfo{Message: "No instance found for model " + s.Model(), Type: "Not Found", Code: 404}}
	if resp.StatusCode != 404 || !cmp.Equal(e, want) {
		t.Errorf("status %d, body %+v; want 404 %+v", resp.StatusCode, e, want)
	}
}

func TestRemotePrefill(t *testing.T) {
	s := newFast(t, Options{LoadDelay: -1})
	var pv struct {
		Previews []struct {
			Instance map[string]any `json:"instance"`
		} `json:"previews"`
	}
	// node_ids picks the free node for the prefill instance.
	getJSON(t, s.URL+"/instance/previews?model_id="+s.Model()+"&node_ids=12D3KooWSimNode02", &pv)
	var pick map[string]any
	for _, p := range pv.Previews {
		if in, ok := p.Instance["MlxRingInstance"].(map[string]any); ok && len(in["shardAssignments"].(map[string]any)["nodeToRunner"].(map[string]any)) == 1 {
			pick = p.Instance
			break
		}
	}
	b, _ := json.Marshal(map[string]any{"instance": pick})
	post(t, s.URL+"/instance", string(b)).Body.Close()
	prefillID := pick["MlxRingInstance"].(map[string]any)["instanceId"].(string)
	var state struct {
		Instances map[string]any `json:"instances"`
	}
	getJSON(t, s.URL+"/state", &state)
	var decodeID string
	for id := range state.Instances {
		if id != prefillID {
			decodeID = id
		}
	}
	link := fmt.Sprintf(`{"prefill_instances":[%q],"decode_instances":[%q]}`, prefillID, decodeID)
	post(t, s.URL+"/v1/instance-links", link).Body.Close()
	var links []instanceLink
	getJSON(t, s.URL+"/v1/instance-links", &links)
	if len(links) != 1 || links[0].Prefill[0] != prefillID {
		t.Fatalf("links = %+v", links)
	}
	p := s.Preset()
	// 3 + 5 + 1001 = 1009 tokens > 1000 uncached: remote.
	r := bench(t, s, prompt(1000), 3, "")
	pp := 1009
	xfer := p.Model.KVBytesPerToken() * float64(pp) / p.Hardware.LinkBandwidth
	want := float64(pp-1) / (handPrefill(p, pp-1, 0, DefaultPrefillChunk) + xfer)
	if !r.Sim.RemotePrefill || !within(r.GenerationStats.PromptTPS, want, 0.02) {
		t.Errorf("remote %v, prompt_tps %.0f; want remote with %.0f (prefill + KV transfer)", r.Sim.RemotePrefill, r.GenerationStats.PromptTPS, want)
	}
	// 3 + 5 + 992 = 1000 tokens: local.
	if r := bench(t, s, prompt(991), 3, ""); r.Sim.RemotePrefill {
		t.Errorf("1000-token prompt was prefilled remotely; the threshold is more than 1000 uncached tokens")
	}
	// PUT upserts under the same id: with the roles swapped the serving
	// instance is no longer a decode instance of any link.
	swapped := fmt.Sprintf(`{"prefill_instances":[%q],"decode_instances":[%q]}`, decodeID, prefillID)
	preq, _ := http.NewRequest(http.MethodPut, s.URL+"/v1/instance-links/"+links[0].ID, strings.NewReader(swapped))
	pr, err := testkit.Client.Do(preq)
	if err != nil {
		t.Fatal(err)
	}
	pr.Body.Close()
	getJSON(t, s.URL+"/v1/instance-links", &links)
	if len(links) != 1 || links[0].Decode[0] != prefillID {
		t.Fatalf("after PUT, links = %+v", links)
	}
	// Now the old decode instance is prefill-only: requests go to the
	// other one and are prefilled on the first.
	if r := bench(t, s, prompt(1003), 3, ""); !r.Sim.RemotePrefill || r.Sim.InstanceID != prefillID {
		t.Errorf("with the link reversed: served by %s, remote %v; want %s, remote", r.Sim.InstanceID, r.Sim.RemotePrefill, prefillID)
	}
	req, _ := http.NewRequest(http.MethodDelete, s.URL+"/v1/instance-links/"+links[0].ID, nil)
	dr, _ := testkit.Client.Do(req)
	dr.Body.Close()
	if r := bench(t, s, prompt(1002), 3, ""); r.Sim.RemotePrefill {
		t.Errorf("prefilled remotely after the link was deleted")
	}
}

func TestModelsEndpoints(t *testing.T) {
	s := newFast(t, Options{})
	var ml struct {
		Object string
		Data   []map[string]any
	}
	getJSON(t, s.URL+"/models", &ml)
	if ml.Object != "list" || len(ml.Data) != 1 || ml.Data[0]["id"] != s.Model() || ml.Data[0]["name"] != "tiny-1b-8bit" {
		t.Errorf("/models = %+v", ml)
	}
	post(t, s.URL+"/models/add", `{"model_id":"sim/custom-x"}`).Body.Close()
	getJSON(t, s.URL+"/v1/models", &ml)
	if len(ml.Data) != 2 || ml.Data[1]["is_custom"] != true {
		t.Errorf("/v1/models after add = %+v", ml.Data)
	}
	getJSON(t, s.VLLMURL+"/v1/models", &ml)
	if len(ml.Data) != 1 || ml.Data[0]["max_model_len"] != float64(Fast().Model.ContextLength) {
		t.Errorf("vLLM /v1/models = %+v", ml.Data)
	}
}

func TestTensorInstanceCost(t *testing.T) {
	s := newFast(t, Options{NoInstance: true, LoadDelay: -1})
	var pv struct {
		Previews []struct {
			Sharding string         `json:"sharding"`
			Meta     string         `json:"instance_meta"`
			Instance map[string]any `json:"instance"`
		} `json:"previews"`
	}
	getJSON(t, s.URL+"/instance/previews?model_id="+s.Model(), &pv)
	var pick map[string]any
	for _, p := range pv.Previews {
		if in, ok := p.Instance["MlxJacclInstance"].(map[string]any); ok && p.Sharding == "Tensor" &&
			len(in["shardAssignments"].(map[string]any)["nodeToRunner"].(map[string]any)) == 2 {
			pick = p.Instance
		}
	}
	b, _ := json.Marshal(map[string]any{"instance": pick})
	post(t, s.URL+"/instance", string(b)).Body.Close()
	r := bench(t, s, prompt(50), 6, "")
	p, pp := s.Preset(), 51+8
	// Tensor parallel on 2 nodes: half the roofline, plus 2 · Layers RDMA
	// hops per step.
	hops := float64(2*p.Model.Layers) * p.Hardware.RDMALatency.Seconds()
	span := 0.0
	for i := 1; i < 6; i++ {
		full := handDecodeStep(p, 1, pp-1+i) - p.Hardware.StepOverhead.Seconds()
		span += full/2 + p.Hardware.StepOverhead.Seconds() + hops
	}
	if want := 5 / span; !within(r.GenerationStats.GenerationTPS, want, 0.02) {
		t.Errorf("generation_tps on a 2-node tensor instance = %.1f, formula gives %.1f", r.GenerationStats.GenerationTPS, want)
	}
	// Both nodes draw more than idle power during the request.
	if len(r.PowerUsage.Nodes) != 2 {
		t.Fatalf("power_usage nodes = %v", r.PowerUsage.Nodes)
	}
	for _, n := range r.PowerUsage.Nodes {
		if n.AvgSysPower <= p.Hardware.IdleWatts {
			t.Errorf("node %s averaged %.2f W, idle is %.0f W: both tensor nodes should work", n.NodeID, n.AvgSysPower, p.Hardware.IdleWatts)
		}
	}
}

func TestCancelNonStreaming(t *testing.T) {
	s := newFast(t, Options{})
	done := make(chan benchResp, 1)
	go func() {
		r, err := benchErr(s, "hi", 1_000_000, "")
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	// As in exo, the command id of a non-streaming request is visible
	// only in /state/tasks while it runs.
	var id string
	for deadline := time.Now().Add(10 * time.Second); id == "" && time.Now().Before(deadline); {
		var tasks map[string]map[string]struct {
			CommandID  string `json:"commandId"`
			TaskStatus string `json:"taskStatus"`
		}
		getJSON(t, s.URL+"/state/tasks", &tasks)
		for _, tk := range tasks {
			if tg, ok := tk["TextGeneration"]; ok && tg.TaskStatus == "Running" {
				id = tg.CommandID
			}
		}
	}
	if id == "" {
		t.Fatal("no running task in /state/tasks")
	}
	c := post(t, s.URL+"/v1/cancel/"+id, "")
	c.Body.Close()
	r := testkit.RecvWithin(t, done, testkit.Patience)
	if len(r.Choices) == 0 {
		t.Fatal("no response to the cancelled request")
	}
	if c.StatusCode != 200 || r.GenerationStats != nil || r.Choices[0].FinishReason != "stop" || r.ID != id {
		t.Errorf("cancel %d; response id %s, generation_stats %v, finish %q; want 200, id %s, null stats, stop",
			c.StatusCode, r.ID, r.GenerationStats, r.Choices[0].FinishReason, id)
	}
}

func TestDeleteInstanceEndsStreams(t *testing.T) {
	s := newFast(t, Options{})
	resp := post(t, s.URL+"/bench/chat/completions", chatBody(s.Model(), "hi", 1_000_000, `,"stream":true`))
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(l, "data: {") {
			break
		}
	}
	var state struct{ Instances map[string]any }
	getJSON(t, s.URL+"/state", &state)
	for id := range state.Instances {
		req, _ := http.NewRequest(http.MethodDelete, s.URL+"/instance/"+id, nil)
		dr, err := testkit.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		dr.Body.Close()
	}
	lines, err := sseLines(t, br)
	if err != nil || len(lines) < 2 {
		t.Fatalf("after delete: %v, %d lines", err, len(lines))
	}
	last2 := lines[len(lines)-2:]
	if !strings.HasPrefix(last2[0], `data: {"error":`) || last2[1] != "data: [DONE]" {
		t.Errorf("stream ends with %q: want an error event then [DONE]", last2)
	}
}

// TestPreviewsNodeIDs checks exo's node_ids filter: every preview contains
// the nodes asked for, even while another node has more free memory.
func TestPreviewsNodeIDs(t *testing.T) {
	s := newFast(t, Options{NoInstance: true, Nodes: 3})
	var pv struct {
		Previews []struct {
			Instance map[string]map[string]any `json:"instance"`
			Error    *string                   `json:"error"`
		} `json:"previews"`
	}
	getJSON(t, s.URL+"/instance/previews?model_id="+s.Model()+"&node_ids=12D3KooWSimNode03", &pv)
	single := 0
	for _, p := range pv.Previews {
		for _, in := range p.Instance {
			nodes := in["shardAssignments"].(map[string]any)["nodeToRunner"].(map[string]any)
			if _, ok := nodes["12D3KooWSimNode03"]; !ok {
				t.Errorf("preview on %v lacks the node asked for", nodes)
			}
			if len(nodes) == 1 {
				single++
			}
		}
	}
	if single == 0 {
		t.Errorf("no single-node preview on the idle node asked for: %+v", pv.Previews)
	}
}
