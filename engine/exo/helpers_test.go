package exo

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// fixture returns the bytes of testdata/name.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stepClock is a controlled clock: every reading is 1 ms after the last.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func newStepClock() *stepClock {
	return &stepClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// fastOptions are Options for tests: millisecond backoffs and polls.
func fastOptions() *Options {
	return &Options{
		RetryWaitMin:  time.Millisecond,
		RetryWaitMax:  2 * time.Millisecond,
		PollInterval:  time.Millisecond,
		SettleBackoff: time.Millisecond,
		Timeout:       5 * time.Second,
	}
}

// newTestClient starts h on a loopback server and returns a Client of it.
func newTestClient(t testing.TB, h http.Handler, opts *Options) (*Client, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	if opts == nil {
		opts = fastOptions()
	}
	c, err := New(srv.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c, srv
}

// writeJSON answers with status and body as exo does.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// notFound answers exo's 404 envelope for a state path.
func notFound(w http.ResponseWriter, what string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": "unable to find path '" + what + "' in state json", "type": "Not Found", "param": nil, "code": 404}})
	writeJSON(w, http.StatusNotFound, b)
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
