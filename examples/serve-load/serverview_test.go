package main

import (
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
)

// TestServerViewInResults: against the embedded engine the results carry
// the server's own view beside the client's, from its vLLM /metrics by
// default and none with --no-server-metrics; through --api ollama, the
// per-response timings instead, and --allow-eos sends no ignore_eos that
// Ollama would warn of.
func TestServerViewInResults(t *testing.T) {
	common := []string{"--format", "json", "--num-requests", "6", "--rate", "50", "--allow-saturated"}
	doc := runJSON(t, common...)
	s := doc.AllRuns()[0].Summary
	if s.Server == nil || s.Server.Requests == nil || *s.Server.Requests != 6 || s.Server.TTFT == nil || len(s.Server.Beside) == 0 {
		t.Errorf("server view %+v; want the embedded engine's vLLM figures over 6 requests", s.Server)
	}
	doc = runJSON(t, append(common, "--no-server-metrics")...)
	if s := doc.AllRuns()[0].Summary; s.Server != nil {
		t.Errorf("--no-server-metrics: server view %+v", s.Server)
	}
	for _, allow := range []bool{false, true} {
		args := append(common, "--api", "ollama")
		if allow {
			args = append(args, "--allow-eos")
		}
		doc = runJSON(t, args...)
		run := doc.AllRuns()[0]
		if rt := run.Summary.Responses; rt == nil || rt.Source != "ollama" || rt.Requests != 6 || run.Summary.Server != nil {
			t.Errorf("--api ollama: per-response timings %+v, server view %+v; want Ollama's timings and no /metrics", rt, run.Summary.Server)
		}
		warned := 0
		for _, r := range run.Requests {
			for _, w := range r.Warnings {
				if w.Code == benchkit.WarnEngine && strings.Contains(w.Message, "IgnoreEOS") {
					warned++
					break
				}
			}
		}
		if allow && warned != 0 || !allow && warned != 6 {
			t.Errorf("--allow-eos %v: %d of 6 rows warn of IgnoreEOS", allow, warned)
		}
	}
}
