package exo

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/engine"
)

// TestCompletionBodyBounded answers a non-streaming request with a body
// one byte over maxBodyBytes: the client stops reading there and reports a
// malformed response instead of holding whatever a broken server sends.
func TestCompletionBodyBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 64 MiB over loopback")
	}
	piece := bytes.Repeat([]byte("a"), 64<<10)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"padding":"`))
		for n := len(`{"padding":"`); n <= maxBodyBytes; n += len(piece) {
			if _, err := w.Write(piece); err != nil {
				return // the client has stopped reading
			}
		}
		_, _ = w.Write([]byte(`"}`))
	})
	c, _ := newTestClient(t, h, nil)
	_, err := c.Complete(context.Background(), engine.Request{Model: "m", MaxTokens: 1, IgnoreEOS: true})
	if engine.KindOf(err) != engine.KindMalformed || !strings.Contains(err.Error(), "at most 67108864 bytes") {
		t.Fatalf("err = %v (kind %q), want a malformed body over 67108864 bytes", err, engine.KindOf(err))
	}
}
