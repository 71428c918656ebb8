package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
)

// TestProbeMetrics: the server root's /metrics is read when it answers
// and left alone, silently, when it does not; a --server-metrics that
// fails is said, and the run goes on without it; an endpoint that serves
// nothing yet is kept, one that serves no server's families refused with
// a word; --no-server-metrics reads nothing.
func TestProbeMetrics(t *testing.T) {
	const text = "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 7\n"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /root/metrics", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, text) })
	mux.HandleFunc("GET /empty/metrics", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /process/metrics", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 3\n")
	})
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
		{"root given as its /v1", srv.URL + "/root/v1/", "", false, srv.URL + "/root/metrics", "the server's own view from"},
		{"named and answers", srv.URL + "/none", srv.URL + "/root/metrics", false, srv.URL + "/root/metrics", "the server's own view from"},
		{"named and fails", srv.URL + "/root", srv.URL + "/none/metrics", false, "", "404 Not Found; no server figures"},
		// A fresh SGLang serves nothing before its first request: kept.
		{"named and empty", srv.URL, srv.URL + "/empty/metrics", false, srv.URL + "/empty/metrics", "it serves no metric family yet"},
		{"root empty", srv.URL + "/empty", "", false, srv.URL + "/empty/metrics", "it serves no metric family yet"},
		// vLLM without stats logging: its process's families alone.
		{"named, no server's families", srv.URL, srv.URL + "/process/metrics", false, "", "serves none of vLLM's, SGLang's, TGI's or llama.cpp's"},
		{"root, no server's families", srv.URL + "/process", "", false, "", "serves none of vLLM's, SGLang's, TGI's or llama.cpp's"},
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

// TestTargetOllama: --api ollama measures the embedded engine's Ollama
// dialect through the native adapter, with the server's own timings on
// each response; an API it does not know is a usage error.
func TestTargetOllama(t *testing.T) {
	tg := &Target{Program: "prog"}
	parseTarget(t, tg, "--api", "ollama")
	ctx := context.Background()
	if err := tg.Check(ctx, []string{"--api", "ollama"}, 0); err != nil {
		t.Fatal(err)
	}
	if err := tg.Start(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if !strings.HasSuffix(tg.URL, "/ollama") || tg.Info.Engine != APIOllama || tg.Metrics != nil {
		t.Errorf("URL %q, engine %q, metrics %v; want the Ollama dialect and no /metrics", tg.URL, tg.Info.Engine, tg.Metrics)
	}
	c, err := tg.Client(openaiOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	res, err := c.Complete(ctx, engine.Request{Model: tg.Model, Stream: true, MaxTokens: 4,
		Messages: []engine.Message{{Role: "user", Content: "hello"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ServerStats == nil || res.ServerStats.Source != "ollama" || res.ServerStats.Prefill == nil {
		t.Errorf("stats %+v; want Ollama's durations", res.ServerStats)
	}
	for _, args := range [][]string{{"--api", "grpc"}, {"--server-samples", "-1s"}} {
		bad := &Target{Program: "prog"}
		parseTarget(t, bad, args...)
		var ue *UsageError
		if err := bad.Check(ctx, nil, 0); !errors.As(err, &ue) {
			t.Errorf("%q: %v; want a usage error", args, err)
		}
	}
}

// TestSimMetricsFlag: --sim-metrics picks the embedded engine's /metrics:
// vLLM's by default, SGLang's (whose histograms appear with their first
// request, its gauges from the start), or none; a mode it does not know
// is a usage error at parse time.
func TestSimMetricsFlag(t *testing.T) {
	for _, tc := range []struct {
		mode, family string
	}{{"", "vllm:time_to_first_token_seconds"}, {"sglang", "sglang:num_running_reqs"}, {"off", ""}} {
		t.Run(tc.mode, func(t *testing.T) {
			tg := &Target{Program: "prog"}
			args := []string{}
			if tc.mode != "" {
				args = append(args, "--sim-metrics", tc.mode)
			}
			parseTarget(t, tg, args...)
			ctx := context.Background()
			if err := tg.Check(ctx, args, 0); err != nil {
				t.Fatal(err)
			}
			if err := tg.Start(ctx, io.Discard); err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			if tc.family == "" {
				if tg.Metrics != nil {
					t.Errorf("metrics %+v with the embedded engine's off", tg.Metrics)
				}
				return
			}
			if tg.Metrics == nil {
				t.Fatal("no metrics from the embedded engine")
			}
			snap, err := tg.Metrics.Probe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := snap.Families[tc.family]; !ok {
				t.Errorf("no %s in the embedded engine's /metrics", tc.family)
			}
		})
	}
	fs := flag.NewFlagSet("prog", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	(&Target{}).AddFlags(fs)
	if err := fs.Parse([]string{"--sim-metrics", "prometheus"}); err == nil {
		t.Error("--sim-metrics prometheus parsed")
	}
}

// TestSimProfileFlag: --sim-profile picks the server the embedded engine
// behaves as: llamacpp serves llama-server at the root (its Server
// header, its metrics, the BOS in its counter), sglang SGLang's metrics,
// ollama Ollama's native API; a profile it does not know, or llamacpp
// with --api ollama or another server's metrics, is a usage error.
func TestSimProfileFlag(t *testing.T) {
	ctx := context.Background()
	start := func(t *testing.T, args ...string) *Target {
		t.Helper()
		tg := &Target{Program: "prog"}
		parseTarget(t, tg, args...)
		if err := tg.Check(ctx, args, 0); err != nil {
			t.Fatal(err)
		}
		if err := tg.Start(ctx, io.Discard); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tg.Close)
		return tg
	}
	t.Run("llamacpp", func(t *testing.T) {
		tg := start(t, "--sim-profile", "llamacpp")
		if tg.URL != tg.Server.URL {
			t.Errorf("URL %s, want the server root %s (llama-server serves /v1 there)", tg.URL, tg.Server.URL)
		}
		resp, err := testkit.Client.Get(tg.URL + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("Server") != "llama.cpp" {
			t.Errorf("Server header %q, want llama.cpp", resp.Header.Get("Server"))
		}
		if tg.Metrics == nil {
			t.Fatal("no metrics from the llama.cpp profile")
		}
		snap, err := tg.Metrics.Probe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := snap.Families["llamacpp:prompt_tokens_total"]; !ok {
			t.Error("no llamacpp:prompt_tokens_total in the profile's /metrics")
		}
		msgs := []promptsize.Message{{Role: "user", Content: "hello"}}
		got, _ := tg.Counter.Count(ctx, msgs)
		builtin, _ := sim.Counter{}.Count(ctx, msgs)
		if got != builtin+1 {
			t.Errorf("counter %d, want the built-in %d and the BOS", got, builtin)
		}
	})
	t.Run("sglang", func(t *testing.T) {
		tg := start(t, "--sim-profile", "sglang")
		snap, err := tg.Metrics.Probe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := snap.Families["sglang:num_running_reqs"]; !ok {
			t.Errorf("families %v, want SGLang's", snap.Families)
		}
	})
	t.Run("ollama", func(t *testing.T) {
		tg := start(t, "--sim-profile", "ollama")
		if tg.API != APIOllama || tg.URL != tg.Server.OllamaURL() {
			t.Errorf("API %q at %s, want ollama at %s", tg.API, tg.URL, tg.Server.OllamaURL())
		}
	})
	for _, args := range [][]string{{"--sim-profile", "tgi"}} {
		fs := flag.NewFlagSet("prog", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		(&Target{}).AddFlags(fs)
		if err := fs.Parse(args); err == nil {
			t.Errorf("%q parsed", args)
		}
	}
	for _, args := range [][]string{
		{"--sim-profile", "llamacpp", "--api", "ollama"},
		{"--sim-profile", "llamacpp", "--sim-metrics", "sglang"},
	} {
		tg := &Target{Program: "prog"}
		parseTarget(t, tg, args...)
		var ue *UsageError
		if err := tg.Check(ctx, args, 0); !errors.As(err, &ue) {
			t.Errorf("%q: %v; want a usage error", args, err)
		}
	}
}
