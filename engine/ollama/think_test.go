package ollama

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/engine"
)

// Request.Thinking goes out as api.ChatRequest's think: a level, a
// switch, or nothing; Extra still overrides it.
func TestThinkField(t *testing.T) {
	off, on := false, true
	for _, tc := range []struct {
		name  string
		th    engine.Thinking
		extra map[string]any
		want  any // the body's think; nil when absent
		warns int
	}{
		{"off", engine.Thinking{Enabled: &off}, nil, false, 0},
		{"on", engine.Thinking{Enabled: &on}, nil, true, 0},
		{"effort", engine.Thinking{Enabled: &on, Effort: "high"}, nil, "high", 0},
		{"off wins over an effort", engine.Thinking{Enabled: &off, Effort: "low"}, nil, false, 0},
		{"budget", engine.Thinking{Budget: 100}, nil, nil, 1},
		{"extra", engine.Thinking{Enabled: &on}, map[string]any{"think": "max"}, "max", 0},
	} {
		th := tc.th
		b, warns, err := requestBody(engine.Request{Model: "m", Thinking: &th, Extra: tc.extra})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatal(err)
		}
		if got, ok := body["think"]; got != tc.want || ok != (tc.want != nil) {
			t.Errorf("%s: think %v (present %v), want %v", tc.name, got, ok, tc.want)
		}
		if len(warns) != tc.warns {
			t.Errorf("%s: warnings %v, want %d", tc.name, warns, tc.warns)
		}
		for _, w := range warns {
			if !errors.Is(w, ErrUnsupported) {
				t.Errorf("%s: warning %v, want one wrapping ErrUnsupported", tc.name, w)
			}
		}
	}
	_, _, err := requestBody(engine.Request{Thinking: &engine.Thinking{Effort: "xhigh"}})
	if engine.KindOf(err) != engine.KindOther || !strings.Contains(err.Error(), `"xhigh"`) {
		t.Errorf("an effort Ollama refuses: %v, want an error naming it", err)
	}
}
