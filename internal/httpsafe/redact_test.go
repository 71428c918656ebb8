package httpsafe

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/inferbench/inferbench/engine"
)

// escapeJSON writes s as the inside of a JSON string, escaping every
// character as \uXXXX when all, else the non-ASCII ones, and "/" as "\/"
// when slash.
func escapeJSON(s string, all, slash bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case all || r >= 0x80:
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04X`, u)
			}
		case slash && r == '/':
			b.WriteString(`\/`)
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestRedactEveryForm(t *testing.T) {
	const key = "sk-live/9f2c+é😀Z"
	quoted, _ := json.Marshal(`{"message":"` + escapeJSON(key, true, false) + `"}`) // JSON in a JSON string
	for _, c := range []struct{ name, text string }{
		{"plain", "bad key Bearer " + key + "."},
		{"slashes", `{"error":"bad key ` + escapeJSON(key, false, true) + `"}`},
		{"non-ASCII escaped", `{"error":"` + escapeJSON(key, false, false) + `"}`},
		{"all escaped", `{"error":"` + escapeJSON(key, true, false) + `"}`},
		{"mixed", `sk-live\/9f2c+\u00e9` + "😀" + `\u005a`},
		{"percent", "Location: /x?key=" + url.QueryEscape(key)},
		{"path escaped", "/" + url.PathEscape(key)},
		{"hex", `b'sk-live/9f2c+\xc3\xa9\xf0\x9f\x98\x80Z'`},
		{"html", "&#115;&#x6B;-live/9f2c+&#233;&#x1F600;Z"},
		{"escaped twice", string(quoted)},
		{"twice, with a Go quote", fmt.Sprintf("%q", `{"e":"`+escapeJSON(key, true, true)+`"}`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !Contains(c.text, key) {
				t.Fatalf("Contains(%q) is false", c.text)
			}
			got := Redact(c.text, key)
			if !strings.Contains(got, Redacted) {
				t.Errorf("Redact(%q) = %q, want %s in it", c.text, got, Redacted)
			}
			if Contains(got, key) || strings.Contains(got, key) {
				t.Errorf("Redact(%q) = %q still holds the key", c.text, got)
			}
			for range 2 { // decode the JSON as a reader would, up to twice
				var s string
				if json.Unmarshal([]byte(got), &s) == nil {
					got = s
				}
				if strings.Contains(got, key) {
					t.Errorf("decoded, %q holds the key", got)
				}
			}
		})
	}
}

func TestRedactKeepsOtherText(t *testing.T) {
	text := `{"error":{"message":"100% done \u00e9 &#65; \/ not a key"}}`
	if got := Redact(text, "sk-abcdef"); got != text {
		t.Errorf("Redact changed text without the key: %q", got)
	}
	if got := Redact(text); got != text {
		t.Errorf("Redact without secrets changed %q to %q", text, got)
	}
	if got := Redact("a sk-1 b sk-1sk-1 c", "sk-1", ""); got != "a [REDACTED] b [REDACTED] c" {
		t.Errorf("repeated and adjacent: %q", got)
	}
	if got := Redact("Bearer tok and tok", HeaderSecrets(http.Header{"Authorization": {"Bearer tok"}})...); got != "[REDACTED] and [REDACTED]" {
		t.Errorf("header secrets: %q", got)
	}
}

func TestRedactError(t *testing.T) {
	const key = "sk-a/b"
	inner := &engine.StatusError{Code: 401, Message: `bad sk-a\/b`}
	err := RedactError(fmt.Errorf("call: %w", inner), key)
	if strings.Contains(err.Error(), `sk-a\/b`) || !strings.Contains(err.Error(), Redacted) {
		t.Errorf("error text %q", err)
	}
	var se *engine.StatusError
	if !errors.As(err, &se) || se != inner {
		t.Errorf("the chain is lost: %v", err)
	}
	plain := errors.New("nothing secret")
	if RedactError(plain, key) != plain || RedactError(nil, key) != nil {
		t.Error("an error without the key was wrapped")
	}
}

func TestHeaderSecrets(t *testing.T) {
	h := http.Header{}
	h.Set("Authorization", "Bearer t0k")
	h.Set("X-Api-Key", "k2")
	h.Set("Accept", "application/json")
	got := strings.Join(HeaderSecrets(h), ",")
	if got != "Bearer t0k,t0k,k2" {
		t.Errorf("HeaderSecrets = %q", got)
	}
	if HeaderSecrets(nil) != nil {
		t.Error("nil header gave secrets")
	}
}

// FuzzRedact checks that no secret survives Redact in any form it looks
// for, however the secret was escaped and whatever surrounds it.
func FuzzRedact(f *testing.F) {
	f.Add("bad key: ", "sk-live/9f2c", "!", uint8(0))
	f.Add(`{"e":"`, "sk/é😀z", `"}`, uint8(1))
	f.Add(`\`, "abcd", `%`, uint8(2))
	f.Add("&#", "tok&#1;", ";", uint8(3))
	f.Add("%4", "a%41b", "1", uint8(4))
	f.Fuzz(func(t *testing.T, prefix, secret, suffix string, form uint8) {
		if len(secret) < 4 || strings.ContainsAny(secret, "[]") || strings.Contains(Redacted, secret) {
			t.Skip()
		}
		var enc string
		switch form % 6 {
		case 0:
			enc = secret
		case 1:
			enc = escapeJSON(secret, false, true)
		case 2:
			enc = escapeJSON(secret, true, false)
		case 3:
			enc = url.QueryEscape(secret)
		case 4:
			b, _ := json.Marshal(escapeJSON(secret, true, true))
			enc = string(b)
		case 5:
			enc = fmt.Sprintf("%+q", secret)
		}
		text := prefix + enc + suffix
		got := Redact(text, secret)
		if Contains(got, secret) {
			t.Fatalf("Redact(%q, %q) = %q still holds the secret", text, secret, got)
		}
		if !strings.Contains(got, Redacted) && Contains(text, secret) {
			t.Fatalf("Redact(%q) = %q: nothing redacted", text, got)
		}
	})
}
