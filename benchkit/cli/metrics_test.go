package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestProbeMetrics: the server root's /metrics is read when it answers
// and left alone, silently, when it does not; a --server-metrics that
// fails or serves nothing is said, and the run goes on without it;
// --no-server-metrics reads nothing.
func TestProbeMetrics(t *testing.T) {
	const text = "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 7\n"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /root/metrics", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, text) })
	mux.HandleFunc("GET /empty/metrics", func(w http.ResponseWriter, r *http.Request) {})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, tc := range []struct {
		name      string
		root, url string
		off       bool
		wantURL   string
		wantSaid  string
	}{
		{"root answers", srv.URL + "/root/", "", false, srv.URL + "/root/metrics", "the server's own view from"},
		{"root has none", srv.URL + "/none", "", false, "", ""},
		{"named and answers", srv.URL + "/none", srv.URL + "/root/metrics", false, srv.URL + "/root/metrics", "the server's own view from"},
		{"named and fails", srv.URL + "/root", srv.URL + "/none/metrics", false, "", "404 Not Found; no server figures"},
		{"named and empty", srv.URL, srv.URL + "/empty/metrics", false, "", "serves no metric families"},
		{"off", srv.URL + "/root", "", true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := &Target{Program: "prog", URL: tc.root, ServerMetricsURL: tc.url, NoServerMetrics: tc.off}
			var said strings.Builder
			m := tg.probeMetrics(context.Background(), &said)
			got := ""
			if m != nil {
				got = m.URL
			}
			if got != tc.wantURL {
				t.Errorf("metrics URL %q; want %q", got, tc.wantURL)
			}
			if tc.wantSaid == "" && said.Len() > 0 || !strings.Contains(said.String(), tc.wantSaid) {
				t.Errorf("said %q; want %q", said.String(), tc.wantSaid)
			}
		})
	}
}
