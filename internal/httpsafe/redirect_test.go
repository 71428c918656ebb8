package httpsafe

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/internal/hostile"
)

func TestNoRedirects(t *testing.T) {
	other := hostile.New(t, hostile.JSON(200, `{}`))
	for _, code := range []int{301, 302, 303, 307, 308} {
		src := hostile.New(t, hostile.Redirect(code, other.URL+"/steal?key=sk-9%2F1"))
		c := &http.Client{CheckRedirect: NoRedirects("sk-9/1")}
		req, _ := http.NewRequest(http.MethodPost, src.URL+"/v1/chat/completions", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer sk-9/1")
		resp, err := c.Do(req)
		if resp != nil {
			resp.Body.Close()
		}
		var re *RedirectError
		if !errors.As(err, &re) || re.Code != code || re.Reason != ReasonBenchmark {
			t.Fatalf("%d: error %v, want a RedirectError", code, err)
		}
		// net/http's *url.Error names the target as it is: the caller
		// redacts the whole text.
		if !strings.Contains(re.Location, other.URL+"/steal") || strings.Contains(re.Location, "sk-9") || Contains(RedactError(err, "sk-9/1").Error(), "sk-9/1") {
			t.Errorf("%d: Location %q, error %q: want the target, redacted", code, re.Location, err)
		}
		var se *engine.StatusError
		if engine.KindOf(err) != engine.KindStatus || !errors.As(err, &se) || se.Code != code {
			t.Errorf("%d: kind %s, want status %d", code, engine.KindOf(err), code)
		}
	}
	if n := other.Count(); n != 0 {
		t.Errorf("%d requests reached the redirect's target", n)
	}
}

func TestSameOrigin(t *testing.T) {
	other := hostile.New(t, hostile.JSON(200, `{"where":"other"}`))
	src := hostile.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/here":
			hostile.Redirect(http.StatusTemporaryRedirect, "/there")(w, r)
		case "/there":
			hostile.JSON(200, `{"where":"there"}`)(w, r)
		case "/away":
			hostile.Redirect(http.StatusMovedPermanently, other.URL+"/v1/models")(w, r)
		case "/loop":
			hostile.Redirect(http.StatusFound, "/loop")(w, r)
		}
	}))
	c := &http.Client{CheckRedirect: SameOrigin("tok")}
	get := func(path string) (string, error) {
		req, _ := http.NewRequest(http.MethodGet, src.URL+path, nil)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), nil
	}
	if body, err := get("/here"); err != nil || body != `{"where":"there"}` {
		t.Errorf("same origin: %q, %v; want the redirect followed", body, err)
	}
	if rs := src.Requests(); len(rs) != 2 || rs[1].Header.Get("Authorization") != "Bearer tok" {
		t.Errorf("same-origin requests %+v, want the credential kept", rs)
	}
	_, err := get("/away")
	var re *RedirectError
	if !errors.As(err, &re) || re.Code != 301 || re.Reason != ReasonCrossOrigin {
		t.Errorf("cross origin: %v, want a RedirectError", err)
	}
	if n := other.Count(); n != 0 {
		t.Errorf("%d requests reached another origin", n)
	}
	if _, err := get("/loop"); !errors.As(err, &re) || re.Reason != ReasonTooMany {
		t.Errorf("loop: %v, want too many redirects", err)
	}
}

func TestSameOriginComparesPorts(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"http://h:80/x", "http://H/y", true},
		{"https://h/x", "https://h:443/", true},
		{"http://h:8000/", "http://h:8001/", false},
		{"http://h/", "https://h/", false},
		{"http://h/", "http://g/", false},
	} {
		req, _ := http.NewRequest("GET", c.b, nil)
		via, _ := http.NewRequest("GET", c.a, nil)
		err := SameOrigin()(req, []*http.Request{via})
		if (err == nil) != c.same {
			t.Errorf("%s → %s: %v, want same origin %v", c.a, c.b, err, c.same)
		}
	}
}
