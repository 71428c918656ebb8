package hostile

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestEscapesDecodeToTheSecret(t *testing.T) {
	const s = `Bearer sk-a/b"é😀`
	for name, esc := range map[string]func(string) string{"slashes": EscapeSlashes, "non-ASCII": EscapeNonASCII, "all": EscapeAll} {
		e := esc(s)
		if strings.Contains(e, s) {
			t.Errorf("%s: %q holds the secret as it is", name, e)
		}
		var got string
		if err := json.Unmarshal([]byte(`"`+e+`"`), &got); err != nil || got != s {
			t.Errorf("%s: %q decodes to %q (%v), want %q", name, e, got, err, s)
		}
	}
}
