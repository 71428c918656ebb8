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

func TestLeaks(t *testing.T) {
	const s = "sk-a/bé"
	for _, text := range []string{
		"x " + s, EscapeSlashes(s), EscapeAll(s), strings.ToUpper(EscapeAll(s)[:0]) + `\u0073\u006B\u002D\u0061\u002F\u0062\u00E9`,
		`"msg": "` + strings.ReplaceAll(EscapeSlashes(s), `\`, `\\`) + `"`, "k=sk-a%2Fb%C3%A9",
	} {
		if !Leaks(text, s) {
			t.Errorf("Leaks(%q) is false", text)
		}
	}
	if Leaks("Bearer [REDACTED] sk-a/b", s) {
		t.Error("Leaks found the secret in text without it")
	}
}
