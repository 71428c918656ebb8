package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine/metrics"
	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/remote"
)

// newLlamaCpp starts a Fast server with the llama.cpp profile.
func newLlamaCppServer(t *testing.T, o LlamaCppOptions) *Server {
	t.Helper()
	return newFast(t, Options{Profile: LlamaCpp, LlamaCpp: o})
}

// lcResp is what the tests read of a llama.cpp answer or final chunk.
type lcResp struct {
	Model   string `json:"model"`
	Object  string `json:"object"`
	Choices []struct {
		FinishReason *string         `json:"finish_reason"`
		Delta        json.RawMessage `json:"delta"`
		Text         string          `json:"text"`
		Message      struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
		Details          *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Timings *lcTimings `json:"timings"`
	IDSlot  int        `json:"id_slot"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Type    string `json:"type"`
		NPrompt int    `json:"n_prompt_tokens"`
		NCtx    int    `json:"n_ctx"`
	} `json:"error"`
}

// lcPost sends body to path and decodes the answer, failing on a status
// other than want.
func lcPost(t *testing.T, s *Server, path, body string, want int) lcResp {
	t.Helper()
	resp := post(t, s.URL+path, body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("POST %s: status %d, want %d: %s", path, resp.StatusCode, want, b)
	}
	var r lcResp
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("POST %s: %v in %s", path, err, b)
	}
	return r
}

// rawExchange is one HTTP/1.1 response read off a raw connection: its
// status line and headers, and its body as the HTTP chunks it came in.
type rawExchange struct {
	status string
	header http.Header
	chunks []string // the body's chunks (one for a Content-Length body)
}

// readRaw reads one response from br.
func readRaw(br *bufio.Reader) (rawExchange, error) {
	var x rawExchange
	line, err := br.ReadString('\n')
	if err != nil {
		return x, fmt.Errorf("status line: %w", err)
	}
	x.status = strings.TrimSpace(line)
	x.header = http.Header{}
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			return x, fmt.Errorf("headers: %w", err)
		}
		l = strings.TrimRight(l, "\r\n")
		if l == "" {
			break
		}
		k, v, _ := strings.Cut(l, ":")
		x.header.Add(k, strings.TrimSpace(v))
	}
	if n := x.header.Get("Content-Length"); n != "" {
		size, _ := strconv.Atoi(n)
		b := make([]byte, size)
		if _, err := io.ReadFull(br, b); err != nil {
			return x, fmt.Errorf("body: %w", err)
		}
		x.chunks = []string{string(b)}
		return x, nil
	}
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			return x, fmt.Errorf("chunk size: %w", err)
		}
		size, err := strconv.ParseInt(strings.TrimSpace(l), 16, 32)
		if err != nil {
			return x, fmt.Errorf("chunk size %q: %w", l, err)
		}
		if size == 0 {
			if _, err := br.ReadString('\n'); err != nil {
				return x, fmt.Errorf("last chunk: %w", err)
			}
			return x, nil
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return x, fmt.Errorf("chunk: %w", err)
		}
		x.chunks = append(x.chunks, string(b[:size]))
	}
}

// rawPost writes a POST of body to path on conn.
func rawPost(t *testing.T, conn net.Conn, path, body string) {
	t.Helper()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body); err != nil {
		t.Fatal(err)
	}
}

// events splits SSE text into its data payloads.
func events(body string) []string {
	var out []string
	for _, ev := range strings.Split(body, "\n\n") {
		if d, ok := strings.CutPrefix(strings.TrimSpace(ev), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// TestLlamaCppRoutes: llama-server's routes at the root, its headers, its
// one model under any name, its 404.
func TestLlamaCppRoutes(t *testing.T) {
	s := newLlamaCppServer(t, LlamaCppOptions{Alias: "tiny-alias", Slots: 2})
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID   string `json:"id"`
			Meta struct {
				NCtx      int `json:"n_ctx"`
				NCtxTrain int `json:"n_ctx_train"`
			} `json:"meta"`
		} `json:"data"`
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	if code := getJSON(t, s.URL+"/v1/models", &models); code != 200 {
		t.Fatalf("/v1/models: %d", code)
	}
	want := s.Preset().Model.ContextLength / 2
	if len(models.Data) != 1 || models.Data[0].ID != "tiny-alias" || models.Data[0].Meta.NCtx != want || len(models.Models) != 1 {
		t.Errorf("/v1/models = %+v; want one model tiny-alias with n_ctx %d", models, want)
	}
	var health map[string]string
	if code := getJSON(t, s.URL+"/health", &health); code != 200 || health["status"] != "ok" {
		t.Errorf("/health: %d %v", code, health)
	}
	for _, model := range []string{"gpt-4o", "", "no/such-model"} {
		body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`, model)
		resp := post(t, s.URL+"/v1/chat/completions", body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("model %q: status %d: %s", model, resp.StatusCode, b)
		}
		if got := resp.Header.Get("Server"); got != "llama.cpp" {
			t.Errorf("Server header %q, want llama.cpp", got)
		}
		if got := resp.Header.Get("Keep-Alive"); got != "timeout=5, max=100" {
			t.Errorf("Keep-Alive header %q, want timeout=5, max=100", got)
		}
		var r lcResp
		json.Unmarshal(b, &r)
		if r.Model != "tiny-alias" {
			t.Errorf("model %q answered as %q, want the served name tiny-alias", model, r.Model)
		}
	}
	for _, path := range []string{"/v1/chat/completions", "/chat/completions", "/completion", "/completions", "/v1/completions"} {
		body := `{"messages":[{"role":"user","content":"hi"}],"prompt":"hi","max_tokens":1,"n_predict":1}`
		if r := lcPost(t, s, path, body, 200); r.Timings == nil {
			t.Errorf("%s: no timings in %+v", path, r)
		}
	}
	resp := post(t, s.URL+"/vllm/v1/chat/completions", chatBody(s.Model(), "hi", 1, ""))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(b), `"File Not Found"`) {
		t.Errorf("the vLLM route: %d %s; want llama-server's 404", resp.StatusCode, b)
	}
	if s.OpenAIURL() != s.URL {
		t.Errorf("OpenAIURL %s, want the root %s", s.OpenAIURL(), s.URL)
	}
}

// TestLlamaCppTokenize: /tokenize's content and add_special, and a body
// without content.
func TestLlamaCppTokenize(t *testing.T) {
	s := newLlamaCppServer(t, LlamaCppOptions{})
	tok := func(body string) []int {
		t.Helper()
		resp := post(t, s.URL+"/tokenize", body)
		defer resp.Body.Close()
		var r struct {
			Tokens []int `json:"tokens"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 || r.Tokens == nil {
			t.Fatalf("/tokenize %s: %d %v %+v", body, resp.StatusCode, err, r)
		}
		return r.Tokens
	}
	text := "Hello, world!"
	plain := tok(fmt.Sprintf(`{"content":%q}`, text))
	if want := (Counter{}).Encode(text); !slices.Equal(plain, want) {
		t.Errorf("tokens %v, want the built-in tokenizer's %v", plain, want)
	}
	if special := tok(fmt.Sprintf(`{"content":%q,"add_special":true}`, text)); !slices.Equal(special, append([]int{tokBOS}, plain...)) {
		t.Errorf("add_special: %v, want the BOS and %v", special, plain)
	}
	if n := tok(`{"content":"<|im_start|>user"}`); len(n) != 2 || n[0] != tokIMStart {
		t.Errorf("a special token: %v, want it parsed whole", n)
	}
	if n := tok(`{"content":"<|im_start|>user","parse_special":false}`); len(n) != CountText("<|im_start|>user") {
		t.Errorf("parse_special false: %v, want the special token's text tokenized as text", n)
	}
	if empty := tok(`{"add_special":true}`); len(empty) != 0 {
		t.Errorf("no content: %v, want no tokens", empty)
	}
}

// TestLlamaCppStreamShape reads a stream off a raw connection: the
// headers wait for a slot; the role chunk comes in one write with the
// first token; one chunk per token; the finish chunk; the usage chunk with
// cached_tokens and the timings; [DONE].
func TestLlamaCppStreamShape(t *testing.T) {
	s := newLlamaCppServer(t, LlamaCppOptions{})
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const n = 6
	body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"tell me"}],"max_tokens":%d,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, n)
	rawPost(t, conn, "/v1/chat/completions", body)
	x, err := readRaw(bufio.NewReader(conn))
	if err != nil {
		t.Fatal(err)
	}
	if x.header.Get("Content-Type") != "text/event-stream" || x.header.Get("Keep-Alive") != "timeout=5, max=100" || x.header.Get("Connection") != "" {
		t.Errorf("headers %v; want an event stream offering keep-alive", x.header)
	}
	if len(x.chunks) == 0 {
		t.Fatal("no body")
	}
	// The first HTTP chunk with data holds the role chunk and the first
	// token: they were flushed together.
	first := 0
	for first < len(x.chunks) && len(events(x.chunks[first])) == 0 {
		first++
	}
	evs := events(x.chunks[first])
	if len(evs) != 2 || !strings.Contains(evs[0], `"delta":{"role":"assistant","content":null}`) || !strings.Contains(evs[1], `"delta":{"content":`) {
		t.Fatalf("first write %q; want the role chunk and the first token's", x.chunks[first])
	}
	all := events(strings.Join(x.chunks, ""))
	if all[len(all)-1] != "[DONE]" {
		t.Errorf("last event %q, want [DONE]", all[len(all)-1])
	}
	var content []lcResp
	var fin, use lcResp
	for _, e := range all[1 : len(all)-1] {
		var r lcResp
		if err := json.Unmarshal([]byte(e), &r); err != nil {
			t.Fatalf("%v in %s", err, e)
		}
		switch {
		case r.Usage != nil:
			use = r
		case len(r.Choices) == 1 && r.Choices[0].FinishReason != nil:
			fin = r
		default:
			content = append(content, r)
		}
	}
	if len(content) != n {
		t.Errorf("%d content chunks, want one per token: %d", len(content), n)
	}
	if fin.Choices == nil || *fin.Choices[0].FinishReason != "length" || string(fin.Choices[0].Delta) != "{}" || fin.Timings != nil {
		t.Errorf("finish chunk %+v; want finish_reason length, an empty delta, no timings", fin)
	}
	if use.Usage == nil || len(use.Choices) != 0 || use.Usage.CompletionTokens != n || use.Usage.Details == nil || use.Timings == nil {
		t.Fatalf("usage chunk %+v; want empty choices, usage with details and timings", use)
	}
	want, _ := s.Counter().Count(context.Background(), []promptsize.Message{{Role: "user", Content: "tell me"}})
	if use.Usage.PromptTokens != want || use.Timings.PredictedN != n || use.Timings.CacheN+use.Timings.PromptN != want {
		t.Errorf("usage %+v, timings %+v; want %d prompt tokens", *use.Usage, *use.Timings, want)
	}
	// Without include_usage the finish chunk is the last and carries the
	// timings.
	rs := lcStream(t, s, strings.Replace(body, `,"stream_options":{"include_usage":true}`, "", 1))
	last := rs[len(rs)-1]
	if last.Usage != nil || last.Timings == nil || last.Choices[0].FinishReason == nil {
		t.Errorf("last chunk without include_usage %+v; want the finish chunk with timings", last)
	}
}

// lcStream sends a streamed request and returns its JSON events ([DONE]
// checked and dropped).
func lcStream(t *testing.T, s *Server, body string) []lcResp {
	t.Helper()
	resp := post(t, s.URL+"/v1/chat/completions", body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	evs := events(string(b))
	if len(evs) == 0 || evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("stream %q does not end with [DONE]", b)
	}
	var out []lcResp
	for _, e := range evs[:len(evs)-1] {
		var r lcResp
		if err := json.Unmarshal([]byte(e), &r); err != nil {
			t.Fatalf("%v in %s", err, e)
		}
		out = append(out, r)
	}
	return out
}

// TestLlamaCppTimings checks the timings' arithmetic and their values
// against the cost model: a lone request's prompt is one batch, each later
// token one decode step.
func TestLlamaCppTimings(t *testing.T) {
	s := newLlamaCppServer(t, LlamaCppOptions{})
	p := s.Preset()
	for _, n := range []int{1, 2, 17} {
		r := lcPost(t, s, "/v1/completions", completionBody("m", ids(100, 1000*n), n, `,"ignore_eos":true`), 200)
		tm := r.Timings
		if tm == nil || tm.PredictedN != n || tm.CacheN != 0 || tm.PromptN != 100 {
			t.Fatalf("n=%d: timings %+v", n, tm)
		}
		near := func(what string, got, want, tol float64) {
			t.Helper()
			if math.Abs(got-want) > tol {
				t.Errorf("n=%d: %s = %v, want %v (±%v)", n, what, got, want, tol)
			}
		}
		near("prompt_ms", tm.PromptMS, ms(p.PrefillChunkTime(100, 0)), 0.0015)
		dec := time.Duration(0)
		for i := 1; i < n; i++ {
			dec += p.DecodeStep([]int{100 + i})
		}
		if n == 1 {
			near("predicted_ms", tm.PredictedMS, 0.001, 1e-9) // t_gen_us is at least 1 µs
		} else {
			near("predicted_ms", tm.PredictedMS, ms(dec), 0.0015)
		}
		near("prompt_per_token_ms", tm.PromptPerTokenMS, tm.PromptMS/100, 1e-9)
		near("prompt_per_second", tm.PromptPerSecond, 100/tm.PromptMS*1e3, 1e-6)
		if n > 1 {
			near("predicted_per_token_ms", tm.PredictedPerTokenMS, tm.PredictedMS/float64(n-1), 1e-9)
			near("predicted_per_second", tm.PredictedPerSecond, float64(n-1)/tm.PredictedMS*1e3, 1e-6)
		} else if tm.PredictedPerTokenMS != 0 || tm.PredictedPerSecond != 0 {
			t.Errorf("n=1: per-token figures %v and %v, want 0 (no decode step)", tm.PredictedPerTokenMS, tm.PredictedPerSecond)
		}
		if r.Usage == nil || r.Usage.PromptTokens != 100 || r.Usage.CompletionTokens != n {
			t.Errorf("n=%d: usage %+v", n, r.Usage)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// TestLlamaCppSlotQueue sends a burst three times the slot count: the
// requests beyond the slots wait, deferred, for a slot, and that wait is
// in no timing: the client's time from the burst to the first token less
// prompt_ms grows by at least a wave (a slot is held for its request's
// whole generation) per wave, while prompt_ms stays a batch or two. From
// the burst's start, not each request's send, so that a goroutine sent
// late cannot look like an early wave.
func TestLlamaCppSlotQueue(t *testing.T) {
	slow := Fast()
	slow.Hardware.StepOverhead = 8 * time.Millisecond
	s := NewServer(Options{Preset: slow, Profile: LlamaCpp, LlamaCpp: LlamaCppOptions{Slots: 2}})
	t.Cleanup(s.Close)
	const slots, waves, gen = 2, 3, 20
	wave := time.Duration(gen) * slow.Hardware.StepOverhead // a lower bound of a wave's span
	type obs struct {
		wait     time.Duration // client TTFT − prompt_ms
		promptMS float64
	}
	got := make([]obs, slots*waves)
	errs := make([]error, len(got))
	var wg sync.WaitGroup
	start := make(chan struct{})
	var burst time.Time
	for i := range got {
		wg.Go(func() {
			<-start // bounded: closed below before the bounded wait for the group
			body := fmt.Sprintf(`{"messages":[{"role":"user","content":"request %d"}],"max_tokens":%d,"ignore_eos":true,"stream":true}`, i, gen)
			resp, err := testkit.Client.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			var ttft time.Duration
			var tm *lcTimings
			for {
				l, err := br.ReadString('\n')
				if d, ok := strings.CutPrefix(strings.TrimSpace(l), "data: "); ok && d != "[DONE]" {
					if ttft == 0 && strings.Contains(d, `"content":"`) {
						ttft = time.Since(burst)
					}
					var r lcResp
					if json.Unmarshal([]byte(d), &r) == nil && r.Timings != nil {
						tm = r.Timings
					}
				}
				if err != nil {
					break
				}
			}
			if tm == nil || ttft == 0 {
				errs[i] = fmt.Errorf("request %d: no first token or no timings", i)
				return
			}
			got[i] = obs{wait: ttft - time.Duration(tm.PromptMS*float64(time.Millisecond)), promptMS: tm.PromptMS}
		})
	}
	burst = time.Now()
	close(start)
	testkit.WaitWithin(t, &wg, testkit.Patience)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b obs) int { return int(a.wait - b.wait) })
	for i, o := range got {
		w := i / slots
		if o.wait < time.Duration(w)*wave {
			t.Errorf("request %d (wave %d): waited %v, want at least %v (the waves before it)", i, w, o.wait, time.Duration(w)*wave)
		}
		if o.promptMS > float64(3*slow.Hardware.StepOverhead)/1e6 {
			t.Errorf("request %d (wave %d): prompt_ms %v, want a batch or two (the slot wait is in no timing)", i, w, o.promptMS)
		}
	}
	t.Logf("waits by wave: %v", got)
}

// TestLlamaCppClosesAfterStream: after a streamed answer whose headers
// offer keep-alive, the server closes the connection; after a whole
// answer it keeps it. A Go client pools the closed connection as
// reusable.
func TestLlamaCppClosesAfterStream(t *testing.T) {
	s := newLlamaCppServer(t, LlamaCppOptions{})
	addr := strings.TrimPrefix(s.URL, "http://")
	whole := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}`
	stream := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true}`

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	for i := range 2 {
		rawPost(t, conn, "/v1/chat/completions", whole)
		x, err := readRaw(br)
		if err != nil || !strings.Contains(x.status, "200") {
			t.Fatalf("whole answer %d on one connection: %v %q", i, err, x.status)
		}
	}
	rawPost(t, conn, "/v1/chat/completions", stream)
	x, err := readRaw(br)
	if err != nil || !strings.Contains(x.status, "200") {
		t.Fatalf("stream on the kept connection: %v %q", err, x.status)
	}
	if x.header.Get("Keep-Alive") != "timeout=5, max=100" || x.header.Get("Connection") != "" {
		t.Errorf("stream headers %v; want Keep-Alive and no Connection: close", x.header)
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("after the stream: read %v, want EOF (the server closed the connection)", err)
	}

	// A Go client's view: the response says the connection may be
	// reused, and the server closes it under the pool.
	eof := make(chan struct{}, 4)
	tr := &http.Transport{DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, a)
		return &eofConn{Conn: c, eof: eof}, err
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Close {
		t.Error("the stream's response says Connection: close; llama-server's offers keep-alive")
	}
	select {
	case <-eof:
	case <-time.After(10 * time.Second):
		t.Error("the pooled connection was not closed by the server within 10 s")
	}
}

// eofConn signals when a read hits the end of the connection.
type eofConn struct {
	net.Conn
	eof chan struct{}
}

func (c *eofConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if errors.Is(err, io.EOF) {
		select {
		case c.eof <- struct{}{}:
		default:
		}
	}
	return n, err
}

// TestLlamaCppTokenCache: a slot reuses the longest common token prefix
// with what it holds, to the token; a slot is chosen by prompt similarity
// above the threshold, else by LRU (an untouched slot, with nothing
// cached).
func TestLlamaCppTokenCache(t *testing.T) {
	send := func(s *Server, prompt []int) lcResp {
		t.Helper()
		return lcPost(t, s, "/completion", fmt.Sprintf(`{"prompt":%s,"n_predict":4,"ignore_eos":true}`, mustJSON(prompt)), 200)
	}
	prefix := ids(37, 500)
	a := append(slices.Clone(prefix), ids(30, 9000)...)
	b := append(slices.Clone(prefix), ids(30, 7000)...)
	s := newLlamaCppServer(t, LlamaCppOptions{})
	ra := send(s, a)
	rb := send(s, b)
	if ra.Timings.CacheN != 0 || rb.Timings.CacheN != len(prefix) || rb.Timings.PromptN != len(b)-len(prefix) {
		t.Errorf("cache_n %d then %d (prompt_n %d); want 0 then the %d shared tokens", ra.Timings.CacheN, rb.Timings.CacheN, rb.Timings.PromptN, len(prefix))
	}
	if ra.IDSlot != rb.IDSlot {
		t.Errorf("slots %d then %d; want the similar prompt in the same slot", ra.IDSlot, rb.IDSlot)
	}
	if ra.IDSlot != DefaultLlamaCppSlots-1 {
		t.Errorf("first slot %d; want the last of the equally unused ones (%d)", ra.IDSlot, DefaultLlamaCppSlots-1)
	}
	// The same prompt again: all but its last token is reused.
	if rc := send(s, b); rc.Timings.CacheN != len(b)-1 || rc.Timings.PromptN != 1 {
		t.Errorf("the same prompt: cache_n %d, prompt_n %d; want %d and 1", rc.Timings.CacheN, rc.Timings.PromptN, len(b)-1)
	}
	// A prompt sharing too little for the similarity threshold goes to
	// the least recently used slot, which holds nothing.
	c := append(ids(3, 500), ids(60, 3000)...)
	if rc := send(s, c); rc.Timings.CacheN != 0 || rc.IDSlot == ra.IDSlot {
		t.Errorf("a dissimilar prompt: cache_n %d in slot %d; want 0 in another slot than %d", rc.Timings.CacheN, rc.IDSlot, ra.IDSlot)
	}
	// With one slot, it is always reused: the 3 shared tokens count.
	one := newLlamaCppServer(t, LlamaCppOptions{Slots: 1})
	send(one, a)
	if r := send(one, c); r.Timings.CacheN != 3 {
		t.Errorf("one slot: cache_n %d, want 3", r.Timings.CacheN)
	}
	// cache_prompt false reuses nothing.
	r := lcPost(t, one, "/completion", fmt.Sprintf(`{"prompt":%s,"n_predict":2,"cache_prompt":false}`, mustJSON(c)), 200)
	if r.Timings.CacheN != 0 {
		t.Errorf("cache_prompt false: cache_n %d, want 0", r.Timings.CacheN)
	}
	// A chat that repeats a reply reuses the reply's tokens too.
	two := newLlamaCppServer(t, LlamaCppOptions{Slots: 1})
	first := lcPost(t, two, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hello there"}],"max_tokens":6,"ignore_eos":true}`, 200)
	reply := first.Choices[0].Message.Content
	msgs := []promptsize.Message{{Role: "user", Content: "hello there"}, {Role: "assistant", Content: reply}}
	body, _ := json.Marshal(map[string]any{"messages": append(msgs, promptsize.Message{Role: "user", Content: "more"}), "max_tokens": 1})
	second := lcPost(t, two, "/v1/chat/completions", string(body), 200)
	// The slot holds the prompt and the reply but its last token.
	want := len(lcChatIDs(msgs[:1], true)) + 6 - 1
	if second.Timings.CacheN != want {
		t.Errorf("the follow-up chat: cache_n %d, want %d (the first prompt and the reply's first 5 tokens)", second.Timings.CacheN, want)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestLlamaCppAddBOS counts a chat as the server does, with either GGUF
// setting: /apply-template then /tokenize with add_special equals
// prompt_tokens; without add_special it is one short when the vocabulary
// adds the BOS; the server's Counter agrees.
func TestLlamaCppAddBOS(t *testing.T) {
	msgs := []promptsize.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "What is a token, really?"}}
	body, _ := json.Marshal(map[string]any{"messages": msgs, "max_tokens": 1})
	for _, noBOS := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoAddBOS=%v", noBOS), func(t *testing.T) {
			s := newLlamaCppServer(t, LlamaCppOptions{NoAddBOS: noBOS})
			r := lcPost(t, s, "/v1/chat/completions", string(body), 200)
			ctx := context.Background()
			// remote.LlamaCpp counts as the server does: /tokenize with
			// add_special. Without it, by hand, a count one short where the
			// vocabulary adds the BOS.
			with, err := (&remote.LlamaCpp{BaseURL: s.URL}).Count(ctx, msgs)
			if err != nil {
				t.Fatal(err)
			}
			var applied struct {
				Prompt string `json:"prompt"`
			}
			ar := post(t, s.URL+"/apply-template", string(body))
			json.NewDecoder(ar.Body).Decode(&applied)
			ar.Body.Close()
			var toks struct {
				Tokens []int `json:"tokens"`
			}
			tr := post(t, s.URL+"/tokenize", mustJSON(map[string]any{"content": applied.Prompt, "add_special": false}))
			json.NewDecoder(tr.Body).Decode(&toks)
			tr.Body.Close()
			without := len(toks.Tokens)
			local, _ := s.Counter().Count(ctx, msgs)
			builtin, _ := Counter{}.Count(ctx, msgs)
			short := 1
			if noBOS {
				short = 0
			}
			if r.Usage.PromptTokens != builtin+1 || with != r.Usage.PromptTokens || without != r.Usage.PromptTokens-short || local != r.Usage.PromptTokens {
				t.Errorf("prompt_tokens %d; /tokenize with add_special %d, without %d; Counter %d; want %d, %d, %d, %d",
					r.Usage.PromptTokens, with, without, local, builtin+1, builtin+1, builtin+1-short, builtin+1)
			}
			var tmpl struct {
				Prompt string `json:"prompt"`
			}
			resp := post(t, s.URL+"/apply-template", string(body))
			json.NewDecoder(resp.Body).Decode(&tmpl)
			resp.Body.Close()
			if strings.HasPrefix(tmpl.Prompt, lcBOSText) == !noBOS {
				t.Errorf("/apply-template %q: the template's BOS should be there only without add_bos", tmpl.Prompt)
			}
		})
	}
}

// TestLlamaCppOverlong: a prompt of the slot's context or more is refused
// with llama-server's 400, streamed or not, once a slot takes it.
func TestLlamaCppOverlong(t *testing.T) {
	s := newLlamaCppServer(t, LlamaCppOptions{SlotContext: 64})
	for _, stream := range []bool{false, true} {
		body := fmt.Sprintf(`{"prompt":%s,"n_predict":4,"stream":%v}`, mustJSON(ids(64, 100)), stream)
		r := lcPost(t, s, "/v1/completions", body, 400)
		want := "request (64 tokens) exceeds the available context size (64 tokens), try increasing it"
		if r.Error == nil || r.Error.Message != want || r.Error.Type != "exceed_context_size_error" || r.Error.Code != 400 || r.Error.NPrompt != 64 || r.Error.NCtx != 64 {
			t.Errorf("stream=%v: %+v; want %q", stream, r.Error, want)
		}
	}
	// 63 tokens fit, and generation stops when the context is full.
	r := lcPost(t, s, "/v1/completions", fmt.Sprintf(`{"prompt":%s,"n_predict":10,"ignore_eos":true}`, mustJSON(ids(63, 100))), 200)
	if r.Usage.CompletionTokens != 1 || *r.Choices[0].FinishReason != "length" {
		t.Errorf("a prompt one short of the context: %+v, want 1 token and length", r.Usage)
	}
}

// TestLlamaCppMetrics: llama-server's 15 families, no request counter and
// no KV usage; prompt_tokens_total counts prefilled tokens, the cached
// ones apart; tokens_predicted_seconds_total the n − 1 steps of each
// request.
func TestLlamaCppMetrics(t *testing.T) {
	s := newLlamaCppServer(t, LlamaCppOptions{})
	url := s.URL + "/metrics"
	fresh := scrape(t, url)
	wantFamilies := []string{
		"llamacpp:prompt_tokens_total", "llamacpp:prompt_tokens_cached_total", "llamacpp:prompt_seconds_total",
		"llamacpp:tokens_predicted_total", "llamacpp:tokens_predicted_seconds_total", "llamacpp:n_decode_total",
		"llamacpp:n_tokens_max", "llamacpp:spec_decode_num_draft_tokens_total", "llamacpp:spec_decode_num_accepted_tokens_total",
		"llamacpp:spec_decode_num_drafts_total", "llamacpp:prompt_tokens_seconds", "llamacpp:predicted_tokens_seconds",
		"llamacpp:requests_processing", "llamacpp:requests_deferred", "llamacpp:n_busy_slots_per_decode",
	}
	var names []string
	for n := range fresh.Families {
		names = append(names, n)
	}
	slices.Sort(names)
	if w := slices.Sorted(slices.Values(wantFamilies)); !slices.Equal(names, w) {
		t.Errorf("families %v, want %v", names, w)
	}
	shared := ids(40, 100)
	var sum lcTimings
	decodes := 0
	for i, n := range []int{5, 1, 9} {
		p := append(slices.Clone(shared), ids(20, 1000*(i+1))...)
		r := lcPost(t, s, "/v1/completions", completionBody("m", p, n, `,"ignore_eos":true`), 200)
		tm := r.Timings
		sum.CacheN += tm.CacheN
		sum.PromptN += tm.PromptN
		sum.PromptMS += tm.PromptMS
		sum.PredictedN += tm.PredictedN
		if tm.PredictedN > 1 {
			sum.PredictedMS += tm.PredictedMS
		} else {
			sum.PredictedMS += 0.001
		}
		decodes += n // one batch for the prompt and its first token, one per later token
	}
	after := scrape(t, url)
	counter := func(name string) float64 {
		t.Helper()
		f := after.Families[name]
		if f == nil || f.Kind != metrics.Counter || len(f.Series) != 1 {
			t.Fatalf("%s: %+v, want one counter series", name, f)
		}
		return f.Series[0].Value
	}
	rel := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-5*math.Max(math.Abs(want), 1e-3) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if sum.CacheN == 0 {
		t.Fatal("the run hit no cache")
	}
	rel("prompt_tokens_total", counter("llamacpp:prompt_tokens_total"), float64(sum.PromptN))
	rel("prompt_tokens_cached_total", counter("llamacpp:prompt_tokens_cached_total"), float64(sum.CacheN))
	rel("prompt_seconds_total", counter("llamacpp:prompt_seconds_total"), sum.PromptMS/1e3)
	rel("tokens_predicted_total", counter("llamacpp:tokens_predicted_total"), float64(sum.PredictedN))
	rel("tokens_predicted_seconds_total", counter("llamacpp:tokens_predicted_seconds_total"), sum.PredictedMS/1e3)
	rel("n_decode_total", counter("llamacpp:n_decode_total"), float64(decodes))
	if g := gauge(t, after, "llamacpp:requests_processing"); g != 0 {
		t.Errorf("requests_processing %v after the run, want 0", g)
	}
	if cppDouble(1234567) != "1.23457e+06" || cppDouble(0.5) != "0.5" || cppDouble(42) != "42" {
		t.Errorf("C++ stream formatting: %s %s %s", cppDouble(1234567), cppDouble(0.5), cppDouble(42))
	}
	off := newFast(t, Options{Profile: LlamaCpp, Metrics: MetricsOff})
	resp, err := testkit.Client.Get(off.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("metrics off: %d, want 501 as llama-server without --metrics", resp.StatusCode)
	}
}

// TestSGLangSeriesAtFirstObservation: a fresh server in SGLang mode has
// its gauges and none of its histograms or counters; the first request
// creates them. vLLM's exist, at zero, from the start.
func TestSGLangSeriesAtFirstObservation(t *testing.T) {
	s := newFast(t, Options{Metrics: MetricsSGLang})
	fresh := scrape(t, s.URL+"/metrics")
	for name, f := range fresh.Families {
		if f.Kind != metrics.Gauge {
			t.Errorf("fresh SGLang server: family %s (%v) before any request", name, f.Kind)
		}
	}
	if _, ok := fresh.Families["sglang:num_running_reqs"]; !ok {
		t.Error("fresh SGLang server: no sglang:num_running_reqs")
	}
	lcPostVLLM(t, s)
	after := waitIdle(t, s.URL+"/metrics", "sglang:num_running_reqs", "sglang:num_queue_reqs")
	for _, name := range []string{"sglang:time_to_first_token_seconds", "sglang:e2e_request_latency_seconds", "sglang:queue_time_seconds", "sglang:prompt_tokens_total", "sglang:num_requests_total"} {
		if _, ok := after.Families[name]; !ok {
			t.Errorf("after a request: no %s", name)
		}
	}
	if _, ok := after.Families["sglang:cached_tokens_total"]; ok {
		t.Error("sglang:cached_tokens_total after a request that hit no cache; SGLang increments it only for cached tokens")
	}
	v := newFast(t, Options{})
	if f := scrape(t, v.URL+"/metrics").Families["vllm:time_to_first_token_seconds"]; f == nil || len(f.Series) != 1 || f.Series[0].Count != 0 {
		t.Errorf("fresh vLLM server: TTFT %+v, want one series at zero", f)
	}
}

func lcPostVLLM(t *testing.T, s *Server) {
	t.Helper()
	resp := post(t, s.VLLMURL+"/v1/chat/completions", chatBody(s.Model(), "hi", 3, ""))
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// TestLlamaCppNativeStream: /completion streams its own objects and ends
// without [DONE].
func TestLlamaCppNativeStream(t *testing.T) {
	s := newLlamaCppServer(t, LlamaCppOptions{})
	resp := post(t, s.URL+"/completion", `{"prompt":"Once upon a time","n_predict":4,"ignore_eos":true,"stream":true}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	evs := events(string(b))
	if len(evs) != 5 || slices.Contains(evs, "[DONE]") {
		t.Fatalf("native stream %q; want 4 tokens and the final object, no [DONE]", b)
	}
	var last struct {
		Stop            bool       `json:"stop"`
		TokensPredicted int        `json:"tokens_predicted"`
		TokensEvaluated int        `json:"tokens_evaluated"`
		StopType        string     `json:"stop_type"`
		Timings         *lcTimings `json:"timings"`
	}
	json.Unmarshal([]byte(evs[4]), &last)
	want := 1 + CountText("Once upon a time")
	if !last.Stop || last.TokensPredicted != 4 || last.TokensEvaluated != want || last.StopType != "limit" || last.Timings == nil {
		t.Errorf("final %+v; want stop, 4 predicted, %d evaluated (the BOS added), limit, timings", last, want)
	}
}

// TestLlamaCppNaturalEnd: without ignore_eos a request may end at its end
// of sequence, counted and not sent.
func TestLlamaCppNaturalEnd(t *testing.T) {
	s := newFast(t, Options{Profile: LlamaCpp, NaturalLength: 4})
	for i := range 20 {
		r := lcPost(t, s, "/v1/chat/completions", fmt.Sprintf(`{"messages":[{"role":"user","content":"q %d"}],"max_tokens":50}`, i), 200)
		if *r.Choices[0].FinishReason != "stop" {
			continue
		}
		if got := len(Tokenize(r.Choices[0].Message.Content)); got != r.Usage.CompletionTokens-1 {
			t.Errorf("%d tokens of text for completion_tokens %d; want the end of sequence counted and not sent", got, r.Usage.CompletionTokens)
		}
		return
	}
	t.Error("no request of 20 ended at its end of sequence with NaturalLength 4")
}

// FuzzLlamaCppPrompt feeds arbitrary prompt fields and /tokenize contents
// to the profile's parsers: they answer or refuse, never panic, and every
// id they return is in the vocabulary when they accept.
func FuzzLlamaCppPrompt(f *testing.F) {
	for _, seed := range []string{`"hello"`, `[1,2,3]`, `["a",2,"b"]`, `[[1,2]]`, `["x","y"]`, `[]`, `null`, `{}`, `[-1]`, `[1e99]`, `"<|im_start|>x<|im_end|>"`, `[""]`, `[1.5]`} {
		f.Add([]byte(seed))
	}
	lc := &llamaCpp{addBOS: true}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if p, e := lc.parsePrompt(raw); e == nil {
			for _, id := range p.ids {
				if id < 0 || id >= lcVocab {
					t.Errorf("prompt %q: id %d outside the vocabulary", raw, id)
				}
			}
		} else if e.code != http.StatusBadRequest {
			t.Errorf("prompt %q: refused with %d, want 400", raw, e.code)
		}
		lc.tokenizeContent(raw, true, true)
		var b lcBody
		if json.Unmarshal(raw, &b) == nil {
			b.int("n_predict")
			b.bool("stream", false)
		}
	})
}

// FuzzLlamaCppTokenize: text without special tokens tokenizes as the
// built-in tokenizer does, with or without parse_special, and a chat's ids
// are the built-in count plus the BOS.
func FuzzLlamaCppTokenize(f *testing.F) {
	for _, seed := range []string{"", "hello world", " a  b\n", "<|im_start|>", "x<|im_sep|>y", "ünï cödé 123"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		plain := lcTokenize(text, false, false)
		if n := CountText(text); len(plain) != n {
			t.Errorf("%q: %d tokens without parse_special, want the built-in %d", text, len(plain), n)
		}
		if !strings.Contains(text, "<|") && !slices.Equal(lcTokenize(text, false, true), plain) {
			t.Errorf("%q: parse_special changed a text without special tokens", text)
		}
		if strings.Contains(text, "<|") {
			return
		}
		msgs := []promptsize.Message{{Role: "user", Content: text}}
		n, _ := Counter{}.Count(context.Background(), msgs)
		if got := len(lcChatIDs(msgs, true)); got != n+1 {
			t.Errorf("%q: a chat of %d ids, want the built-in %d and the BOS", text, got, n)
		}
	})
}

// TestLlamaCppCallerCounter: with a caller's Counter a chat's
// prompt_tokens are its count, and cache_n is the slot's reuse scaled to
// it; prompt_n is the rest.
func TestLlamaCppCallerCounter(t *testing.T) {
	double := promptsize.CounterFunc(func(ctx context.Context, msgs []promptsize.Message) (int, error) {
		n, err := llamaCppCounter{}.Count(ctx, msgs)
		return 2 * n, err
	})
	s := newFast(t, Options{Profile: LlamaCpp, Counter: double, LlamaCpp: LlamaCppOptions{Slots: 1}})
	msgs := []promptsize.Message{{Role: "user", Content: strings.Repeat("word ", 40)}}
	body, _ := json.Marshal(map[string]any{"messages": msgs, "max_tokens": 2})
	lcPost(t, s, "/v1/chat/completions", string(body), 200)
	r := lcPost(t, s, "/v1/chat/completions", string(body), 200)
	want, _ := double.Count(context.Background(), msgs)
	ids := len(lcChatIDs(msgs, true))
	if r.Usage.PromptTokens != want || r.Timings.CacheN != (ids-1)*want/ids || r.Timings.CacheN+r.Timings.PromptN != want {
		t.Errorf("usage %+v, timings %+v; want %d prompt tokens, %d of them cached", *r.Usage, *r.Timings, want, (ids-1)*want/ids)
	}
	if got, _ := s.Counter().Count(context.Background(), msgs); got != want {
		t.Errorf("Server.Counter counts %d, want the caller's %d", got, want)
	}
}
