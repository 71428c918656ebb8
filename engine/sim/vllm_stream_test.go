package sim

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
)

// TestVLLMRoleChunkWithFirstToken: the vLLM API sends its headers at once
// and its first chunk (the role chunk) only when the first token is
// generated, as vLLM does: a client that times the first chunk reads the
// prefill, not 0. The preset prefills so slowly that the cost model puts
// the first token ≥ 50 ms after the request; the first data line must not
// come sooner (a lower bound, which load on the machine cannot break).
func TestVLLMRoleChunkWithFirstToken(t *testing.T) {
	p := Fast()
	p.Hardware.FLOPS = 1e12 // 2 GFLOP per token: ~2 ms a token of prefill
	s := NewServer(Options{Preset: p})
	defer s.Close()
	content := strings.TrimSpace(strings.Repeat("hello ", 40))
	n, err := s.Counter().Count(context.Background(), []promptsize.Message{{Role: "user", Content: content}})
	if err != nil {
		t.Fatal(err)
	}
	prefill := p.PrefillTime(n, 0, 0)
	if prefill < 50*time.Millisecond {
		t.Fatalf("the cost model prefills %d tokens in %v; the test needs ≥ 50ms", n, prefill)
	}
	body := `{"model":"` + s.Model() + `","messages":[{"role":"user","content":"` + content + `"}],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`
	start := time.Now()
	resp, err := testkit.Client.Post(s.VLLMURL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	headers := time.Since(start)
	if headers >= prefill {
		t.Logf("headers came after %v, the prefill is %v: the machine is loaded; the bound below still holds", headers, prefill)
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	first := time.Since(start)
	if !strings.Contains(line, `"role":"assistant"`) || !strings.Contains(line, `"completion_tokens":0`) {
		t.Errorf("first line %q, want the role chunk with completion_tokens 0", line)
	}
	if first < prefill*8/10 {
		t.Errorf("the role chunk came %v after the request, before the cost model's first token at %v", first, prefill)
	}
}

// TestVLLMStreamOptionsWithoutStream: vLLM answers 400 to stream_options
// on a request that does not stream; so does the sim.
func TestVLLMStreamOptionsWithoutStream(t *testing.T) {
	s := NewServer(Options{Preset: Fast()})
	defer s.Close()
	body := `{"model":"` + s.Model() + `","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":false,"stream_options":{"include_usage":true}}`
	resp, err := testkit.Client.Post(s.VLLMURL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d, want 400", resp.StatusCode)
	}
}
