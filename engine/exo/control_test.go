package exo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/internal/testkit"
)

func TestNewBaseURL(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{"http://studio.local", "http://studio.local:52415", ""},
		{"http://127.0.0.1:8000/", "http://127.0.0.1:8000", ""},
		{"http://[::1]", "http://[::1]:52415", ""},
		{"studio.local:52415", "", "expected http://host[:port]"},
		{"ftp://x", "", "expected http://host[:port]"},
	} {
		c, err := New(tt.in, nil)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("New(%q) error = %v, want one containing %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("New(%q): %v", tt.in, err)
			continue
		}
		if got := c.BaseURL(); got != tt.want {
			t.Errorf("New(%q).BaseURL() = %q, want %q", tt.in, got, tt.want)
		}
		if c.control.Logger != nil {
			t.Errorf("New(%q) without a logger: retry logger is %T, want nil (silent)", tt.in, c.control.Logger)
		}
	}
}

// flaky answers failures times with status, then the models fixture.
type flaky struct {
	hits     atomic.Int32
	failures int32
	status   int
	body     []byte
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if n := f.hits.Add(1); n <= f.failures {
		writeJSON(w, f.status, []byte(`{"error":{"message":"temporarily unavailable","type":"Service Unavailable","param":null,"code":503}}`))
		return
	}
	writeJSON(w, http.StatusOK, f.body)
}

func TestControlRetriesThenSucceeds(t *testing.T) {
	f := &flaky{failures: 2, status: http.StatusServiceUnavailable, body: fixture(t, "models.json")}
	var logs bytes.Buffer
	opts := fastOptions()
	opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, _ := newTestClient(t, f, opts)
	cards, err := c.ModelCards(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.hits.Load(); got != 3 {
		t.Errorf("server saw %d attempts, want 3", got)
	}
	if len(cards) != 3 {
		t.Errorf("got %d cards, want 3", len(cards))
	}
	if !strings.Contains(logs.String(), "retrying request") || !strings.Contains(logs.String(), "level=DEBUG") {
		t.Errorf("retry log records missing or not at debug level:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("retry logs at error level:\n%s", logs.String())
	}
}

func TestControlNotFoundIsNotRetried(t *testing.T) {
	var hits atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		writeJSON(w, http.StatusNotFound, fixture(t, "error_404.json"))
	})
	c, srv := newTestClient(t, h, nil)
	_, err := c.ModelCards(context.Background(), false)
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v is no *APIError", err)
	}
	want := APIError{Op: "GET " + srv.URL + "/models", Attempts: 1, StatusCode: 404}
	if diff := cmp.Diff(want, *ae, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Err" }, cmp.Ignore())); diff != "" {
		t.Errorf("APIError (-want +got):\n%s", diff)
	}
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("errors.Is(%v, ErrNotFound) = false", err)
	}
	var se *engine.StatusError
	if !errors.As(err, &se) || se.Message != "No instance found for model "+llama {
		t.Errorf("cause = %v, want the exo envelope's message", ae.Err)
	}
	if hits.Load() != 1 {
		t.Errorf("server saw %d attempts, want 1", hits.Load())
	}
}

func TestControlGivesUp(t *testing.T) {
	f := &flaky{failures: 100, status: http.StatusInternalServerError}
	opts := fastOptions()
	opts.RetryMax = 2
	c, _ := newTestClient(t, f, opts)
	_, err := c.ModelCards(context.Background(), false)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Attempts != 3 || ae.StatusCode != 500 {
		t.Fatalf("error = %v, want an *APIError with 3 attempts and status 500", err)
	}
	if f.hits.Load() != 3 {
		t.Errorf("server saw %d attempts, want 3", f.hits.Load())
	}
	if errors.Is(err, ErrNotFound) {
		t.Errorf("a 500 matches ErrNotFound")
	}
	if !strings.Contains(err.Error(), "3 attempts, last status 500") {
		t.Errorf("message %q does not count attempts", err)
	}
}

func TestControlConnectionErrorsAreRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conn.Close() // reset before any answer
		}
	}()
	defer ln.Close()
	opts := fastOptions()
	opts.RetryMax = 3
	c, err := New("http://"+ln.Addr().String(), opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.NodeID(context.Background())
	var ae *APIError
	if !errors.As(err, &ae) || ae.Attempts != 4 || ae.StatusCode != 0 {
		t.Fatalf("error = %v, want an *APIError with 4 attempts and no status", err)
	}
	if !strings.Contains(err.Error(), "no response") {
		t.Errorf("message %q does not say no response came", err)
	}
}

func TestControlNoRetries(t *testing.T) {
	f := &flaky{failures: 1, status: http.StatusBadGateway}
	opts := fastOptions()
	opts.RetryMax = -1
	c, _ := newTestClient(t, f, opts)
	_, err := c.ModelCards(context.Background(), false)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Attempts != 1 || ae.StatusCode != 502 {
		t.Fatalf("error = %v, want 1 attempt with status 502", err)
	}
}

func TestModelsAndResolve(t *testing.T) {
	var added []map[string]any
	var mu sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("GET /models", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, fixture(t, "models.json"))
	})
	mux.HandleFunc("POST /models/add", func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		added = append(added, m)
		mu.Unlock()
		// exo fills only some fields of a custom card.
		writeJSON(w, 200, []byte(`{"id":"acme/New-Model-4bit","hugging_face_id":"","name":"","storage_size_megabytes":512,"supports_tensor":false,"tasks":["TextGeneration"],"is_custom":true}`))
	})
	c, _ := newTestClient(t, mux, nil)
	ctx := context.Background()

	models, err := c.Models(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.Model{
		{ID: "mlx-community/Qwen3-30B-A3B-8bit", Name: "Qwen3-30B-A3B-8bit", OwnedBy: "exo", ContextLength: 40960},
		{ID: llama, Name: "Llama-3.2-1B-Instruct-4bit", OwnedBy: "exo", ContextLength: 131072},
		{ID: "other-org/Llama-3.2-1B-Instruct-4bit", Name: "Llama-3.2-1B-Instruct-4bit", OwnedBy: "exo", ContextLength: 131072},
	}
	if diff := cmp.Diff(want, models); diff != "" {
		t.Errorf("Models (-want +got):\n%s", diff)
	}

	for _, tt := range []struct {
		name    string
		add     bool
		wantID  string
		wantErr error
	}{
		{"llama-3.2-1b-INSTRUCT-4bit", false, llama, nil}, // short name, any case, first listed wins
		{"other-org/Llama-3.2-1B-Instruct-4bit", false, "other-org/Llama-3.2-1B-Instruct-4bit", nil},
		{"Other-Org/Llama-3.2-1B-Instruct-4bit", false, "", ErrModelNotFound}, // full ids are case-sensitive
		{"Qwen3-30B-A3B", false, "", ErrModelNotFound},
		{"NoSlash", true, "", ErrModelNotFound},
		{"acme/New-Model-4bit", true, "acme/New-Model-4bit", nil},
	} {
		m, err := c.ResolveModel(ctx, tt.name, tt.add)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("ResolveModel(%q, %v) error = %v, want %v", tt.name, tt.add, err, tt.wantErr)
			continue
		}
		if err == nil && m.FullID() != tt.wantID {
			t.Errorf("ResolveModel(%q, %v) = %q, want %q", tt.name, tt.add, m.FullID(), tt.wantID)
		}
	}
	if diff := cmp.Diff([]map[string]any{{"model_id": "acme/New-Model-4bit"}}, added); diff != "" {
		t.Errorf("/models/add bodies (-want +got):\n%s", diff)
	}
	m, _ := c.AddModel(ctx, "acme/New-Model-4bit")
	if m.ShortID() != "New-Model-4bit" || m.FullID() != "acme/New-Model-4bit" || m.StorageBytes() != 512<<20 {
		t.Errorf("added card: short %q full %q bytes %d", m.ShortID(), m.FullID(), m.StorageBytes())
	}
}

func TestPrewarmOpensConnections(t *testing.T) {
	const n = 6
	var (
		mu    sync.Mutex
		fresh int
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /node_id", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, []byte(`"12D3KooWNodeA"`))
	})
	mux.HandleFunc("POST /bench/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		writeJSON(w, 200, fixture(t, "bench_response.json"))
	})
	opts := fastOptions()
	opts.MaxBurst = n
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			fresh++
			mu.Unlock()
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := New(srv.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	opened := func() int { mu.Lock(); defer mu.Unlock(); return fresh }

	if err := c.Prewarm(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	if got := opened(); got != n {
		t.Fatalf("Prewarm(%d) opened %d connections", n, got)
	}
	// A burst of n requests now dials nothing.
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := c.Complete(context.Background(), benchRequest(false)); err != nil {
				t.Error(err)
			}
		})
	}
	testkit.WaitWithin(t, &wg, testkit.Patience)
	if got := opened(); got != n {
		t.Errorf("after a burst of %d: %d connections opened in all, want %d", n, got, n)
	}
	// Prewarming again finds them idle and opens none.
	if err := c.Prewarm(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	if got := opened(); got != n {
		t.Errorf("second Prewarm opened %d more connections, want 0", got-n)
	}
	if err := c.Prewarm(context.Background(), n+1); err == nil || !strings.Contains(err.Error(), "MaxBurst") {
		t.Errorf("Prewarm(MaxBurst+1) error = %v, want one naming MaxBurst", err)
	}
}

func TestPrewarmReportsFailures(t *testing.T) {
	c, srv := newTestClient(t, http.NotFoundHandler(), nil)
	srv.Close()
	err := c.Prewarm(context.Background(), 3)
	if err == nil || !strings.Contains(err.Error(), "opened 0 of 3 connections") {
		t.Errorf("error = %v, want one saying 0 of 3 opened", err)
	}
}

func TestCancelAndFlags(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/cancel/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "live" {
			writeJSON(w, 200, []byte(`{"message":"Command cancelled.","command_id":"live"}`))
			return
		}
		writeJSON(w, 404, []byte(`{"error":{"message":"Command not found","type":"Not Found","param":null,"code":404}}`))
	})
	mux.HandleFunc("GET /v1/feature-flags", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, []byte(`{"disaggregation":true}`))
	})
	c, _ := newTestClient(t, mux, nil)
	ctx := context.Background()
	if err := c.Cancel(ctx, "live"); err != nil {
		t.Errorf("Cancel(live): %v", err)
	}
	if err := c.Cancel(ctx, "gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Cancel(gone) = %v, want ErrNotFound", err)
	}
	if on, err := c.Disaggregation(ctx); err != nil || !on {
		t.Errorf("Disaggregation = %v, %v", on, err)
	}
}

func TestControlContextCanceledDuringBackoff(t *testing.T) {
	f := &flaky{failures: 100, status: http.StatusServiceUnavailable}
	opts := fastOptions()
	opts.RetryWaitMin = time.Hour
	opts.RetryWaitMax = time.Hour
	c, _ := newTestClient(t, f, opts)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for f.hits.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := c.ModelCards(ctx, false)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}
