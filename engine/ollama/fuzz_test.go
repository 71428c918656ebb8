package ollama

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/inferbench/inferbench/engine"
)

// FuzzReadStream feeds arbitrary bytes to the stream parser, seeded with
// the recorded streams: it must not panic, must end with no error or a
// typed one, and what it returns must be bounded and valid.
func FuzzReadStream(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.ndjson"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, 8)
	}
	f.Add([]byte(okLine+doneLine(`,"eval_count":-3`)), 4)
	f.Add([]byte("{\"message\":{\"content\":\"\\ud83e\"}}\n{\"done\":true,\"eval_count\":2}"), 2)
	f.Add([]byte("\r\n\r\n{}\n"), 0)
	f.Fuzz(func(t *testing.T, body []byte, maxTokens int) {
		maxTokens = max(maxTokens%1000, 0)
		req := engine.Request{MaxTokens: maxTokens, Stream: true}
		res, _, err := parseRecorded(t, body, req)
		if k := engine.KindOf(err); k == engine.KindOther {
			t.Fatalf("untyped error %v", err)
		}
		if verr := res.Trace.Validate(); res.Trace.Start.IsZero() == false && verr != nil {
			t.Fatalf("invalid trace: %v", verr)
		}
		if len(res.Text) > engine.MaxKeptText {
			t.Fatalf("kept %d bytes of text", len(res.Text))
		}
		if n := len(res.Trace.Chunks); n > engine.MaxPlausibleCount(maxTokens) {
			t.Fatalf("%d chunks for max_tokens %d", n, maxTokens)
		}
		for _, ch := range res.Trace.Chunks {
			if ch.Tokens < 1 {
				t.Fatalf("a chunk of %d tokens", ch.Tokens)
			}
		}
		if err == nil && res.Usage != nil && res.Usage.CompletionTokens > engine.MaxPlausibleCount(maxTokens) {
			t.Fatalf("usage %+v beyond the bound", res.Usage)
		}
		// The counts add up to eval_count, hidden tokens included, or a
		// warning says they do not.
		if err == nil && res.Usage != nil && len(res.Trace.Chunks) > 0 {
			n := res.Trace.Tokens() + res.Trace.HiddenTokens
			if n != res.Usage.CompletionTokens && !errors.Is(errors.Join(res.Warnings...), ErrTokenMismatch) {
				t.Fatalf("chunks %d and %d hidden, eval_count %d, no warning: %v", res.Trace.Tokens(), res.Trace.HiddenTokens, res.Usage.CompletionTokens, res.Warnings)
			}
			if res.Trace.HiddenTokens < 0 || (res.Trace.HiddenTokens > 0 && !errors.Is(errors.Join(res.Warnings...), ErrHiddenTokens)) {
				t.Fatalf("%d hidden tokens, warnings %v", res.Trace.HiddenTokens, res.Warnings)
			}
		}
	})
}
