package hostile

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/internal/testkit"
)

// TestUsageHandlers: the payloads are the JSON they claim to be, with the
// absurd numbers spelled as plain integers.
func TestUsageHandlers(t *testing.T) {
	s := New(t, UsageStream(Usage{8, 1}, Usage{8, 1e18}))
	resp, err := testkit.Client.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	frames := strings.Split(strings.TrimSpace(string(b)), "\n\n")
	if len(frames) != 3 || frames[2] != "data: [DONE]" {
		t.Fatalf("frames %q", frames)
	}
	var ck struct {
		Choices []struct{ Delta struct{ Content string } }
		Usage   struct {
			CompletionTokens int64 `json:"completion_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(frames[1], "data: ")), &ck); err != nil || ck.Usage.CompletionTokens != 1e18 || ck.Choices[0].Delta.Content != "t" {
		t.Errorf("second chunk %q: %+v, %v", frames[1], ck, err)
	}

	var body struct {
		Choices []struct{ Message struct{ Content string } }
		Usage   *struct {
			PromptTokens int64 `json:"prompt_tokens"`
		}
		Stats *struct {
			GenerationTPS float64 `json:"generation_tps"`
		} `json:"generation_stats"`
	}
	raw := CompletionBody("hi", Usage{-3, 5}.JSON(), ExoStats(1, -3461.8, 4, 5))
	if err := json.Unmarshal([]byte(raw), &body); err != nil || body.Usage.PromptTokens != -3 || body.Stats.GenerationTPS != -3461.8 || body.Choices[0].Message.Content != "hi" {
		t.Errorf("CompletionBody %s: %+v, %v", raw, body, err)
	}
}

// TestFloodStopsWithClient: a flood stops writing when its client goes
// away, and says how much it wrote.
func TestFloodStopsWithClient(t *testing.T) {
	f := &Flood{ChunkBytes: 1024, Total: 1 << 40}
	s := New(t, f)
	resp, err := testkit.Client.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s.CloseClientConnections()
	s.Close() // returns once the handler has
	if w := f.Written(); w < 32<<10 || w >= f.Total {
		t.Errorf("wrote %d bytes, want at least what was read and far less than %d", w, f.Total)
	}
}
