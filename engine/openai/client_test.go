package openai

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/adaptertest"
	"github.com/inferbench/inferbench/internal/httpsafe"
	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recorded serves a recorded body with the given status and content type,
// flushing after every event, and hands each request's decoded body and
// headers to seen.
type recorded struct {
	status int
	ctype  string
	body   []byte

	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
}

func (rs *recorded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	rs.mu.Lock()
	rs.bodies = append(rs.bodies, m)
	rs.headers = append(rs.headers, r.Header.Clone())
	rs.mu.Unlock()
	w.Header().Set("Content-Type", rs.ctype)
	status := rs.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	fl, _ := w.(http.Flusher)
	for _, ev := range strings.SplitAfter(string(rs.body), "\n\n") {
		_, _ = io.WriteString(w, ev)
		if fl != nil {
			fl.Flush()
		}
	}
}

func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func newClient(t *testing.T, base string, o *Options) *Client {
	return adaptertest.NewClient(t, New, base, o)
}

func TestCompleteStreamOverHTTP(t *testing.T) {
	rs := &recorded{ctype: "text/event-stream", body: readTestdata(t, "vllm_continuous.sse")}
	srv := serve(t, rs)
	t.Setenv("TEST_OPENAI_KEY", "sk-test-1234567890")
	c := newClient(t, srv.URL+"/v1/", &Options{
		APIKeyEnv: "TEST_OPENAI_KEY",
		Header:    http.Header{"X-Team": {"bench"}},
	})

	var sends []time.Time
	ctx := engine.WithSendHook(context.Background(), func(t time.Time) { sends = append(sends, t) })
	temp := 0.0
	res, err := c.Complete(ctx, engine.Request{
		Model:       "meta-llama/Llama-3.1-8B-Instruct",
		Messages:    []engine.Message{{Role: "user", Content: "Say something."}},
		MaxTokens:   8,
		MinTokens:   8,
		IgnoreEOS:   true,
		Stream:      true,
		Temperature: &temp,
		Header:      http.Header{"X-Request": {"one"}},
	})
	if err != nil {
		t.Fatal(err)
	}

	// What went out.
	wantBody := map[string]any{
		"model":          "meta-llama/Llama-3.1-8B-Instruct",
		"messages":       []any{map[string]any{"role": "user", "content": "Say something."}},
		"max_tokens":     8.0,
		"min_tokens":     8.0,
		"ignore_eos":     true,
		"stream":         true,
		"temperature":    0.0,
		"stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true},
	}
	if diff := cmp.Diff(wantBody, rs.bodies[0]); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
	h := rs.headers[0]
	for k, want := range map[string]string{
		"Authorization": "Bearer sk-test-1234567890",
		"Accept":        "text/event-stream",
		"Content-Type":  "application/json",
		"X-Team":        "bench",
		"X-Request":     "one",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}

	// What came back.
	if res.Text != "The quick brown fox jumps over the lazy" {
		t.Errorf("Text = %q", res.Text)
	}
	var tokens []int
	for _, ch := range res.Trace.Chunks {
		tokens = append(tokens, ch.Tokens)
	}
	if diff := cmp.Diff([]int{1, 1, 2, 1, 1, 1, 1}, tokens); diff != "" {
		t.Errorf("chunk tokens (-want +got):\n%s", diff)
	}
	if res.Usage == nil || *res.Usage != (engine.Usage{PromptTokens: 21, CompletionTokens: 8, TotalTokens: 29}) {
		t.Errorf("Usage = %+v", res.Usage)
	}
	if res.FinishReason != "length" || res.ResponseID != "chatcmpl-8f1b2c3d4e5f40718293a4b5c6d7e8f9" {
		t.Errorf("FinishReason %q, ResponseID %q", res.FinishReason, res.ResponseID)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("Warnings = %v, want none", res.Warnings)
	}
	if err := res.Trace.Validate(); err != nil {
		t.Errorf("trace: %v", err)
	}
	if res.Trace.Headers.IsZero() || res.Trace.End.Before(res.Trace.Chunks[len(res.Trace.Chunks)-1].At) {
		t.Errorf("trace Headers %v, End %v", res.Trace.Headers, res.Trace.End)
	}
	if len(sends) != 1 || !sends[0].Equal(res.Trace.Start) {
		t.Errorf("send hook got %v, want exactly Trace.Start %v", sends, res.Trace.Start)
	}
	if n := res.Trace.Tokens(); n != 8 {
		t.Errorf("trace tokens %d, want 8", n)
	}
}

// fixtureModel is the model the recorded vLLM answers name.
const fixtureModel = "meta-llama/Llama-3.1-8B-Instruct"

func TestCompleteNonStreaming(t *testing.T) {
	rs := &recorded{ctype: "application/json", body: readTestdata(t, "vllm_nonstream.json")}
	srv := serve(t, rs)
	c := newClient(t, srv.URL, nil)
	res, err := c.Complete(context.Background(), engine.Request{Model: fixtureModel, MaxTokens: 8, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rs.bodies[0]["stream_options"]; ok || rs.bodies[0]["stream"] != false {
		t.Errorf("non-streaming body %v: want stream false and no stream_options", rs.bodies[0])
	}
	if got := rs.headers[0].Get("Authorization"); got != "" {
		t.Errorf("Authorization %q sent without a key", got)
	}
	want := engine.Result{
		Text: "The quick brown fox jumps over the lazy", ResponseID: "chatcmpl-6a5b4c3d2e1f40a9b8c7d6e5f4a3b2c1",
		Model: fixtureModel, FinishReason: "length",
		Usage:     &engine.Usage{PromptTokens: 21, CompletionTokens: 8, TotalTokens: 29},
		RequestID: rs.headers[0].Get("X-Request-Id"),
	}
	if !strings.HasPrefix(want.RequestID, "ib-") {
		t.Errorf("X-Request-Id sent: %q, want a new id starting ib-", want.RequestID)
	}
	got := res
	got.Trace, got.Connect = want.Trace, nil // Connect: TestConnectOnlyWhenDialed
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	tr := res.Trace
	if tr.Start.IsZero() || tr.Headers.Before(tr.Start) || tr.End.Before(tr.Headers) || len(tr.Chunks) != 0 {
		t.Errorf("trace %+v: want Start ≤ Headers ≤ End and no chunks", tr)
	}
}

func TestShortGenerationWarning(t *testing.T) {
	// The server stopped at 8 tokens although ignore_eos asked for 16.
	srv := serve(t, &recorded{ctype: "text/event-stream", body: readTestdata(t, "vllm_continuous.sse")})
	c := newClient(t, srv.URL, nil)
	res, err := c.Complete(context.Background(), engine.Request{Model: fixtureModel, MaxTokens: 16, IgnoreEOS: true, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !errors.Is(res.Warnings[0], ErrShortGeneration) {
		t.Fatalf("Warnings = %v, want one ErrShortGeneration", res.Warnings)
	}
	if msg := res.Warnings[0].Error(); !strings.Contains(msg, "max_tokens=16") || !strings.Contains(msg, "generated 8") {
		t.Errorf("warning %q should name 16 asked and 8 generated", msg)
	}
}

func TestStreamAnsweredWithJSON(t *testing.T) {
	srv := serve(t, &recorded{ctype: "application/json; charset=utf-8", body: readTestdata(t, "vllm_nonstream.json")})
	c := newClient(t, srv.URL, nil)
	res, err := c.Complete(context.Background(), engine.Request{Model: fixtureModel, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !errors.Is(res.Warnings[0], ErrNotStreamed) || res.Usage == nil || res.Usage.CompletionTokens != 8 {
		t.Errorf("Warnings %v, Usage %+v: want ErrNotStreamed and the body's usage", res.Warnings, res.Usage)
	}
}

func TestRequestBodyFlavours(t *testing.T) {
	topK := 40
	req := engine.Request{Model: "m", Stream: true, MaxTokens: 4, MinTokens: 2, IgnoreEOS: true, TopK: &topK,
		Stop: []string{"\n"}, Extra: map[string]any{"max_tokens": 5, "priority": 1}}
	cases := []struct {
		opts  Options
		want  map[string]any // fields beyond model, messages and stream
		warns int
	}{
		{Options{}, map[string]any{"max_tokens": 5.0, "min_tokens": 2.0, "ignore_eos": true, "top_k": 40.0, "stop": []any{"\n"}, "priority": 1.0,
			"stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}}, 0},
		{Options{Flavour: FlavourSGLang, NoContinuousUsage: true}, map[string]any{"max_tokens": 5.0, "min_tokens": 2.0, "ignore_eos": true, "top_k": 40.0, "stop": []any{"\n"}, "priority": 1.0,
			"stream_options": map[string]any{"include_usage": true}}, 0},
		{Options{Flavour: FlavourLlamaCpp}, map[string]any{"max_tokens": 5.0, "min_tokens": 2.0, "ignore_eos": true, "top_k": 40.0, "stop": []any{"\n"}, "priority": 1.0,
			"stream_options": map[string]any{"include_usage": true}}, 0},
		{Options{Flavour: FlavourOllama}, map[string]any{"max_tokens": 5.0, "top_k": 40.0, "stop": []any{"\n"}, "priority": 1.0,
			"stream_options": map[string]any{"include_usage": true}}, 2},
		{Options{Flavour: FlavourOpenAI, NoStreamUsage: true}, map[string]any{"max_tokens": 5.0, "stop": []any{"\n"}, "priority": 1.0}, 3},
	}
	for _, tc := range cases {
		t.Run(string(tc.opts.Flavour), func(t *testing.T) {
			c := newClient(t, "http://127.0.0.1:9", &tc.opts)
			b, warns, err := c.requestBody(req, "")
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"model": "m", "messages": []any{}, "stream": true}
			for k, v := range tc.want {
				want[k] = v
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if len(warns) != tc.warns {
				t.Errorf("warnings %v, want %d", warns, tc.warns)
			}
			for _, w := range warns {
				if !errors.Is(w, ErrUnsupported) {
					t.Errorf("warning %v does not wrap ErrUnsupported", w)
				}
			}
		})
	}
}

func TestRequestValidation(t *testing.T) {
	c := newClient(t, "http://127.0.0.1:9", nil)
	for _, req := range []engine.Request{{MaxTokens: -1}, {MinTokens: -1}, {MaxTokens: 4, MinTokens: 5}} {
		_, err := c.Complete(context.Background(), req)
		if engine.KindOf(err) != engine.KindOther || !strings.Contains(err.Error(), "MinTokens") {
			t.Errorf("Complete(%+v) = %v, want a validation error naming the fields", req, err)
		}
	}
}

func TestNewErrors(t *testing.T) {
	t.Setenv("TEST_OPENAI_EMPTY", "  ")
	cases := []struct {
		base string
		o    *Options
		want string
	}{
		{"ftp://host", nil, "want scheme http or https"},
		{"http://", nil, "want a host"},
		{"http://user:pw@host", nil, "no user information"},
		{"http://host", &Options{APIKeyEnv: "TEST_OPENAI_UNSET_VARIABLE"}, "TEST_OPENAI_UNSET_VARIABLE, which is not set"},
		{"http://host", &Options{APIKeyEnv: "TEST_OPENAI_EMPTY"}, "TEST_OPENAI_EMPTY, which is empty"},
		{"http://host", &Options{APIKeyFile: filepath.Join(t.TempDir(), "missing")}, "no such file"},
		{"http://host", &Options{Flavour: "tgi"}, `unknown Flavour "tgi"`},
		{"http://host", &Options{MaxBurst: -1}, "MaxBurst=-1"},
	}
	for _, tc := range cases {
		_, err := New(tc.base, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q, %+v) = %v, want an error containing %q", tc.base, tc.o, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("error %q shows the URL's password", err)
		}
	}
}

func TestBaseURLForms(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8000":           "http://127.0.0.1:8000",
		"http://127.0.0.1:8000/":          "http://127.0.0.1:8000",
		"http://127.0.0.1:8000/v1":        "http://127.0.0.1:8000",
		"http://127.0.0.1:8000/v1/":       "http://127.0.0.1:8000",
		"https://host/api/openai/v1?x=1":  "https://host/api/openai",
		" http://127.0.0.1:8000/prefix/ ": "http://127.0.0.1:8000/prefix",
	} {
		c := newClient(t, in, nil)
		if got := c.BaseURL(); got != want {
			t.Errorf("New(%q).BaseURL() = %q, want %q", in, got, want)
		}
	}
}

// TestAPIKeyNeverInErrors forces every kind of error with a key set, from
// servers that echo the Authorization header back, and checks that the key
// appears in no error text while the errors keep their types.
func TestAPIKeyNeverInErrors(t *testing.T) {
	const key = "sk-secret-ABCDEFGHIJKLMNOP"
	t.Setenv("TEST_OPENAI_SECRET", key)
	echo := func(w http.ResponseWriter, r *http.Request) string {
		return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	cases := []struct {
		name    string
		handler http.HandlerFunc
		kind    engine.Kind
	}{
		{"status body", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"invalid key %s","type":"AuthenticationError","code":401}}`, echo(w, r))
		}, engine.KindStatus},
		{"stream error", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"error\":{\"message\":\"bad key %s\",\"code\":500}}\n\n", echo(w, r))
		}, engine.KindStreamError},
		{"malformed chunk", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {not json %s\n\n", echo(w, r))
		}, engine.KindMalformed},
		{"malformed body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, "<html>%s</html>", echo(w, r))
		}, engine.KindMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, tc.handler)
			c := newClient(t, srv.URL, &Options{APIKeyEnv: "TEST_OPENAI_SECRET"})
			_, err := c.Complete(context.Background(), engine.Request{Model: "m", Stream: tc.name != "malformed body"})
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), httpsafe.Redacted) {
				t.Errorf("error %q: want the key replaced by %s", err, httpsafe.Redacted)
			}
			if got := engine.KindOf(err); got != tc.kind {
				t.Errorf("kind %q, want %q (%v)", got, tc.kind, err)
			}
			var se *engine.StatusError
			if errors.As(err, &se) && (strings.Contains(se.Body, key) || strings.Contains(se.Message, key)) {
				t.Errorf("StatusError fields hold the key: %+v", se)
			}
			// Models echoes too.
			_, err = c.Models(context.Background())
			if err == nil || strings.Contains(err.Error(), key) {
				t.Errorf("Models error %v: want an error without the key", err)
			}
		})
	}

	// A key read from a file is sent the same way.
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rs := &recorded{ctype: "application/json", body: readTestdata(t, "vllm_nonstream.json")}
	srv := serve(t, rs)
	c := newClient(t, srv.URL, &Options{APIKeyFile: path})
	if _, err := c.Complete(context.Background(), engine.Request{Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if got := rs.headers[0].Get("Authorization"); got != "Bearer "+key {
		t.Errorf("Authorization %q, want the file's key as a bearer token", got)
	}
}

func TestStatusErrors(t *testing.T) {
	for _, name := range []string{"vllm_error_404.json", "vllm_error_404_legacy.json"} {
		t.Run(name, func(t *testing.T) {
			srv := serve(t, &recorded{status: http.StatusNotFound, ctype: "application/json", body: readTestdata(t, name)})
			c := newClient(t, srv.URL, nil)
			res, err := c.Complete(context.Background(), engine.Request{Model: "meta-llama/Nope", Stream: true})
			var se *engine.StatusError
			if !errors.As(err, &se) || se.Code != 404 || se.Message != "The model `meta-llama/Nope` does not exist." {
				t.Fatalf("err = %#v, want a 404 StatusError with the server's message", err)
			}
			if res.Trace.Start.IsZero() || res.Trace.End.IsZero() {
				t.Errorf("trace %+v: want Start and End of the failed request", res.Trace)
			}
		})
	}
}

func TestTruncatedAndDoneOptional(t *testing.T) {
	body := readTestdata(t, "vllm_truncated.sse")
	srv := serve(t, &recorded{ctype: "text/event-stream", body: body})
	c := newClient(t, srv.URL, nil)
	res, err := c.Complete(context.Background(), engine.Request{Model: "m", Stream: true})
	if engine.KindOf(err) != engine.KindTruncated || !errors.Is(err, engine.ErrNoDone) {
		t.Errorf("err = %v, want KindTruncated wrapping ErrNoDone", err)
	}
	if len(res.Trace.Chunks) != 1 || res.Text != "The" {
		t.Errorf("partial result %q with %d chunks, want \"The\" and 1", res.Text, len(res.Trace.Chunks))
	}
	c2 := newClient(t, srv.URL, &Options{DoneOptional: true})
	if _, err := c2.Complete(context.Background(), engine.Request{Model: "m", Stream: true}); err != nil {
		t.Errorf("DoneOptional: %v", err)
	}
}

func TestConnectError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var sends int
	ctx := engine.WithSendHook(context.Background(), func(time.Time) { sends++ })
	c := newClient(t, "http://"+addr, nil)
	_, err = c.Complete(ctx, engine.Request{Model: "m", Stream: true})
	if engine.KindOf(err) != engine.KindConnect {
		t.Errorf("err = %v (kind %q), want KindConnect", err, engine.KindOf(err))
	}
	if sends != 0 {
		t.Errorf("send hook called %d times for a request that never had a connection", sends)
	}
}

func TestCancelMidStream(t *testing.T) {
	sent := make(chan struct{})
	release := make(chan struct{})
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n")
		w.(http.Flusher).Flush()
		close(sent)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer close(release)
	c := newClient(t, srv.URL, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-sent
		cancel()
	}()
	res, err := c.Complete(ctx, engine.Request{Model: "m", Stream: true})
	if engine.KindOf(err) != engine.KindCanceled || !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v (kind %q), want KindCanceled wrapping context.Canceled", err, engine.KindOf(err))
	}
	if res.Trace.End.IsZero() {
		t.Error("End not set after cancellation")
	}
}

func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(&recorded{ctype: "application/json", body: readTestdata(t, "vllm_nonstream.json")})
	t.Cleanup(srv.Close)
	req := engine.Request{Model: "m"}

	c := newClient(t, srv.URL, nil)
	_, err := c.Complete(context.Background(), req)
	var uerr x509.UnknownAuthorityError
	if err == nil || !errors.As(err, &uerr) {
		t.Errorf("default verification: err = %v, want x509.UnknownAuthorityError", err)
	}
	if engine.KindOf(err) != engine.KindConnect {
		t.Errorf("kind %q, want %q for a failed handshake", engine.KindOf(err), engine.KindConnect)
	}

	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tlsConf := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	tlsConf.RootCAs = pool
	c = newClient(t, srv.URL, &Options{TLSConfig: tlsConf})
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Errorf("with the server's pool: %v", err)
	}

	c = newClient(t, srv.URL, &Options{InsecureSkipVerify: true})
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Errorf("InsecureSkipVerify: %v", err)
	}
}

// countConns wraps a server to count the connections it accepts.
func countConns(srv *httptest.Server) *atomic.Int64 {
	var n atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	return &n
}

func TestPrewarmOpensConnections(t *testing.T) {
	models := readTestdata(t, "vllm_models.json")
	stream := readTestdata(t, "vllm_continuous.sse")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == modelsPath {
			w.Header().Set("Content-Type", "application/json")
			w.Write(models)
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(stream)
	}))
	conns := countConns(srv)
	srv.Start()
	t.Cleanup(srv.Close)

	const n = 6
	c := newClient(t, srv.URL, &Options{MaxBurst: n})
	if err := c.Prewarm(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	if got := conns.Load(); got != n {
		t.Fatalf("Prewarm(%d) opened %d connections", n, got)
	}

	// A burst of n requests now dials nothing.
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Complete(context.Background(), engine.Request{Model: "m", Stream: true})
			errs <- err
		}()
	}
	testkit.WaitWithin(t, &wg, testkit.Patience)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := conns.Load(); got > n {
		t.Errorf("burst after Prewarm opened %d new connections, want 0", got-n)
	}

	if err := c.Prewarm(context.Background(), n+1); err == nil || !strings.Contains(err.Error(), "MaxBurst") {
		t.Errorf("Prewarm beyond MaxBurst: %v", err)
	}
}

func TestPrewarmFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := newClient(t, "http://"+addr, nil)
	err = c.Prewarm(context.Background(), 3)
	if err == nil || !strings.Contains(err.Error(), "opened 0 of 3") || engine.KindOf(err) != engine.KindConnect {
		t.Errorf("err = %v, want KindConnect saying 0 of 3 opened", err)
	}
}

func TestModels(t *testing.T) {
	cases := []struct {
		file string
		want []engine.Model
	}{
		{"vllm_models.json", []engine.Model{{ID: "meta-llama/Llama-3.1-8B-Instruct", OwnedBy: "vllm", ContextLength: 131072}}},
		{"llamacpp_models.json", []engine.Model{{ID: "gemma-3-1b-it", OwnedBy: "llamacpp", ContextLength: 32768}}},
	}
	for _, tc := range cases {
		srv := serve(t, &recorded{ctype: "application/json", body: readTestdata(t, tc.file)})
		got, err := newClient(t, srv.URL, nil).Models(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.file, diff)
		}
	}
}

func TestModelsRetries(t *testing.T) {
	models := readTestdata(t, "vllm_models.json")
	var calls atomic.Int64
	flaky := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"message":"warming up"}}`)
			return
		}
		w.Write(models)
	}))
	fast := &Options{RetryWait: time.Millisecond}
	got, err := newClient(t, flaky.URL, fast).Models(context.Background())
	if err != nil || len(got) != 1 || calls.Load() != 3 {
		t.Errorf("flaky server: %v, %d models after %d calls; want success on the third", err, len(got), calls.Load())
	}

	var calls404 atomic.Int64
	missing := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls404.Add(1)
		http.NotFound(w, r)
	}))
	_, err = newClient(t, missing.URL, fast).Models(context.Background())
	var se *engine.StatusError
	if !errors.As(err, &se) || se.Code != 404 || calls404.Load() != 1 {
		t.Errorf("404: err %v after %d calls, want a StatusError after one", err, calls404.Load())
	}

	var calls500 atomic.Int64
	down := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls500.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	_, err = newClient(t, down.URL, &Options{RetryWait: time.Millisecond, Retries: 2}).Models(context.Background())
	if !errors.As(err, &se) || se.Code != 500 || calls500.Load() != 3 || !strings.Contains(err.Error(), "3 attempt(s)") {
		t.Errorf("always 500: err %v after %d calls, want a StatusError counting 3 attempts", err, calls500.Load())
	}
}

// wordCounter counts words, plus a fixed template overhead of 5 for the
// assistant turn, as a chat Counter would.
var wordCounter = promptsize.CounterFunc(func(_ context.Context, msgs []promptsize.Message) (int, error) {
	n := 0
	for _, m := range msgs {
		n += 5 + len(strings.Fields(m.Content))
	}
	return n, nil
})

func TestCounterEstimates(t *testing.T) {
	// No usage at all: counts come from the Counter, overhead removed.
	// Prefixes "one" "one two" "one two three four" → 1, 2, 4 words:
	// tokens 1, 1, 2.
	body := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"one\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" two\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" three four\"}}]}\n\n" +
		"data: [DONE]\n\n"
	res, _, err := parseRecorded(t, []byte(body), &Options{Counter: wordCounter}, engine.Request{})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, ch := range res.Trace.Chunks {
		got = append(got, ch.Tokens)
	}
	if diff := cmp.Diff([]int{1, 1, 2}, got); diff != "" {
		t.Errorf("tokens (-want +got):\n%s", diff)
	}
	if len(res.Warnings) != 1 || !errors.Is(res.Warnings[0], ErrEstimatedTokens) {
		t.Errorf("Warnings = %v, want one ErrEstimatedTokens", res.Warnings)
	}

	// A failing counter leaves the counts unknown, with a warning.
	failing := func(context.Context, string) (int, error) { return 0, errors.New("tokenizer offline") }
	res, _, err = parseRecorded(t, []byte(body), &Options{CountText: failing}, engine.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 2 || !errors.Is(res.Warnings[0], ErrUnknownTokens) || !strings.Contains(res.Warnings[0].Error(), "tokenizer offline") {
		t.Errorf("Warnings = %v, want ErrUnknownTokens naming the cause", res.Warnings)
	}
}

func TestUsageThatDoesNotGrow(t *testing.T) {
	// The second content chunk repeats completion_tokens 1: it comes from
	// the same decode step as the first (SGLang's split of a reasoning and
	// a content chunk), so it adds its text but no token and no gap.
	body := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}],\"usage\":{\"completion_tokens\":1}}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}],\"usage\":{\"completion_tokens\":1}}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"c\"}}],\"usage\":{\"completion_tokens\":4}}\n\n" +
		"data: [DONE]\n\n"
	res, _, err := parseRecorded(t, []byte(body), nil, engine.Request{})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, ch := range res.Trace.Chunks {
		got = append(got, ch.Tokens)
	}
	// "ab" is 1 token, "c" 4 − 1 = 3.
	if diff := cmp.Diff([]int{1, 3}, got); diff != "" {
		t.Errorf("tokens (-want +got):\n%s", diff)
	}
	if res.Text != "abc" || res.Trace.Tokens() != 4 {
		t.Errorf("text %q, %d tokens; want \"abc\", 4", res.Text, res.Trace.Tokens())
	}
	if len(res.Warnings) != 0 {
		t.Errorf("Warnings = %v, want none", res.Warnings)
	}
}

// TestResetBeforeHeaders resets the connection once the request has
// arrived, before a byte of response: the error is KindReset.
func TestResetBeforeHeaders(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			// Read the request head, then close with RST.
			buf := make([]byte, 4096)
			var got []byte
			for !strings.Contains(string(got), "\r\n\r\n") {
				n, err := conn.Read(buf)
				if err != nil {
					break
				}
				got = append(got, buf[:n]...)
			}
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}
	}()
	var sends int
	ctx := engine.WithSendHook(context.Background(), func(time.Time) { sends++ })
	c := newClient(t, "http://"+ln.Addr().String(), nil)
	res, err := c.Complete(ctx, engine.Request{Model: "m", Stream: true})
	if engine.KindOf(err) != engine.KindReset {
		t.Errorf("err = %v (kind %q), want KindReset", err, engine.KindOf(err))
	}
	if sends != 1 || res.Trace.Start.IsZero() || !res.Trace.Headers.IsZero() {
		t.Errorf("%d sends, trace %+v: want one send at Start and no Headers", sends, res.Trace)
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select { // stall until the client gives up
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer close(release)
	c := newClient(t, srv.URL, &Options{Timeout: 50 * time.Millisecond})
	_, err := c.Complete(context.Background(), engine.Request{Model: "m", Stream: true})
	if engine.KindOf(err) != engine.KindTimeout {
		t.Errorf("err = %v (kind %q), want KindTimeout", err, engine.KindOf(err))
	}
}

func TestErrorObjectInJSONBody(t *testing.T) {
	srv := serve(t, &recorded{ctype: "application/json", body: []byte(`{"error":{"message":"engine dead","type":"InternalServerError","code":500}}`)})
	c := newClient(t, srv.URL, nil)
	_, err := c.Complete(context.Background(), engine.Request{Model: "m"})
	var se *engine.StreamError
	if engine.KindOf(err) != engine.KindStreamError || !errors.As(err, &se) || se.Message != "engine dead" || se.Code != 500 {
		t.Errorf("err = %v, want KindStreamError with the server's message and code", err)
	}
}

// TestLogsHoldNoKey runs failing and succeeding requests with a debug
// logger and checks that the key is nowhere in the log.
func TestLogsHoldNoKey(t *testing.T) {
	const key = "sk-log-secret-0987654321"
	t.Setenv("TEST_OPENAI_LOGKEY", key)
	var calls atomic.Int64
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1)%2 == 1 {
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, r.Header.Get("Authorization"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(readTestdata(t, "vllm_models.json"))
	}))
	var buf strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := newClient(t, srv.URL, &Options{APIKeyEnv: "TEST_OPENAI_LOGKEY", Logger: log, RetryWait: time.Millisecond})
	_, _ = c.Complete(context.Background(), engine.Request{Model: "m"})
	if _, err := c.Models(context.Background()); err != nil { // 502 then 200
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if buf.Len() == 0 {
		t.Fatal("nothing logged at debug level")
	}
	if strings.Contains(buf.String(), key) {
		t.Errorf("the log holds the key:\n%s", buf.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
