package remote_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/internal/hostile"
	"github.com/inferbench/inferbench/internal/httpsafe"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/remote"
)

const remoteKey = "sk-tok/9f2c+Zé😀x"

var hello = []promptsize.Message{{Role: "user", Content: "Hello"}}

func authHeader() http.Header {
	return http.Header{"Authorization": {"Bearer " + remoteKey}}
}

// holdsKey reports whether text holds the key, or its start (an excerpt
// cut in the middle of it), as it is or escaped.
func holdsKey(text string) bool {
	prefix := remoteKey[:len("sk-tok/9")]
	return hostile.Leaks(text, remoteKey) || hostile.Leaks(text, prefix) || httpsafe.Contains(text, remoteKey, prefix)
}

// TestTokenizeErrorsRedacted: /tokenize (and llama.cpp's endpoints) answer
// with the Authorization header echoed, escaped each way, in a 401 body
// and in a 200 body that is not a count. No error text and no
// StatusError.Body holds the key, whole or cut short by an excerpt; every
// request carried it.
func TestTokenizeErrorsRedacted(t *testing.T) {
	for name, esc := range map[string]func(string) string{
		"slashes": hostile.EscapeSlashes, "non-ASCII": hostile.EscapeNonASCII, "all": hostile.EscapeAll,
	} {
		for _, status := range []int{http.StatusUnauthorized, http.StatusOK} {
			srv := hostile.New(t, hostile.EchoAuth(status, esc))
			for cname, c := range map[string]promptsize.Counter{
				"vllm":     &remote.VLLM{BaseURL: srv.URL, Header: authHeader()},
				"llamacpp": &remote.LlamaCpp{BaseURL: srv.URL, Header: authHeader()},
			} {
				_, err := c.Count(context.Background(), hello)
				if err == nil {
					t.Fatalf("%s %s %d: no error", name, cname, status)
				}
				if holdsKey(err.Error()) {
					t.Errorf("%s %s %d: the error holds the key: %v", name, cname, status, err)
				}
				var se *remote.StatusError
				if status != http.StatusOK && (!errors.As(err, &se) || se.Status != status || holdsKey(se.Body) || !strings.Contains(se.Body, httpsafe.Redacted)) {
					t.Errorf("%s %s: %v, want a StatusError with the echo redacted", name, cname, err)
				}
			}
			for _, r := range srv.Requests() {
				if r.Header.Get("Authorization") != "Bearer "+remoteKey {
					t.Errorf("%s %s went without the Authorization header", r.Method, r.Path)
				}
			}
		}
	}
}

// TestTokenizeBounded: a server that never answers is given up on after the
// Counter's Timeout, and a cancelled context ends a Count too.
func TestTokenizeBounded(t *testing.T) {
	srv := hostile.New(t, hostile.NoHeaders())
	c := &remote.VLLM{BaseURL: srv.URL, Timeout: 50 * time.Millisecond}
	if _, err := c.Count(context.Background(), hello); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Timeout: %v, want a deadline error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.Timeout = -1 // no bound of its own: the context's only
	if _, err := c.Count(ctx, hello); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// TestTokenizeRedirects: a redirect to another origin is refused, so the
// key never reaches it; one within the origin is followed with the key.
func TestTokenizeRedirects(t *testing.T) {
	other := hostile.New(t, hostile.JSON(200, `{"count":3}`))
	src := hostile.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/tokenize":
			hostile.Redirect(http.StatusTemporaryRedirect, "/v2/tokenize")(w, r)
		case "/v2/tokenize":
			hostile.JSON(200, `{"count":7}`)(w, r)
		case "/away/tokenize":
			hostile.Redirect(http.StatusTemporaryRedirect, other.URL+"/tokenize?k="+remoteKey)(w, r)
		}
	}))
	c := &remote.VLLM{BaseURL: src.URL, Header: authHeader()}
	if n, err := c.Count(context.Background(), hello); err != nil || n != 7 {
		t.Errorf("same origin: %d, %v; want 7", n, err)
	}
	if rs := src.Requests(); len(rs) != 2 || rs[1].Header.Get("Authorization") == "" || rs[1].Method != http.MethodPost {
		t.Errorf("same-origin requests %+v: want a second POST with the key", rs)
	}
	c.BaseURL = src.URL + "/away"
	_, err := c.Count(context.Background(), hello)
	if err == nil || !strings.Contains(err.Error(), "307 redirect") || holdsKey(err.Error()) {
		t.Errorf("cross origin: %v, want the refused 307 named, the key redacted", err)
	}
	if n := other.Count(); n != 0 {
		t.Errorf("%d requests reached another origin", n)
	}
}
