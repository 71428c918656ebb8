package httpconn

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseBase(t *testing.T) {
	for _, tc := range []struct{ raw, suffix, want, err string }{
		{raw: " http://h:1/v1/ ", suffix: "/v1", want: "http://h:1"},
		{raw: "https://h/p/api?x=1#f", suffix: "/api", want: "https://h/p"},
		{raw: "ftp://h", suffix: "/v1", err: `pkg: base URL "ftp://h": want scheme http or https, found "ftp"`},
		{raw: "http://", suffix: "/v1", err: `pkg: base URL "http://": want a host, found none`},
		{raw: "http://u:secret@h", suffix: "/v1", err: "pkg: base URL http://u:xxxxx@h: want no user information in the URL (use Options.APIKeyEnv)"},
	} {
		got, err := ParseBase("pkg", tc.raw, tc.suffix)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseBase(%q) = %q, %v; want the error %q", tc.raw, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseBase(%q) = %q, %v; want %q", tc.raw, got, err, tc.want)
		}
	}
}

func TestReadKey(t *testing.T) {
	t.Setenv("HTTPCONN_KEY", " k1 \n")
	t.Setenv("HTTPCONN_EMPTY", " ")
	dir := t.TempDir()
	file := filepath.Join(dir, "key")
	if err := os.WriteFile(file, []byte("k2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ env, path, want, err string }{
		{},
		{env: "HTTPCONN_KEY", path: file, want: "k1"},
		{path: file, want: "k2"},
		{env: "HTTPCONN_UNSET", err: "pkg: APIKeyEnv names HTTPCONN_UNSET, which is not set"},
		{env: "HTTPCONN_EMPTY", err: "pkg: APIKeyEnv names HTTPCONN_EMPTY, which is empty"},
		{path: filepath.Join(dir, "none"), err: "pkg: APIKeyFile " + filepath.Join(dir, "none") + ": no such file or directory"},
	} {
		got, err := ReadKey("pkg", tc.env, tc.path)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ReadKey(%q, %q) = %q, %v; want the error %q", tc.env, tc.path, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ReadKey(%q, %q) = %q, %v; want %q", tc.env, tc.path, got, err, tc.want)
		}
	}
}

// TestNewRequest: the Conn's headers replace the client's own, extra's
// replace both, and the token is among the secrets with the headers'
// credentials.
func TestNewRequest(t *testing.T) {
	c := New(Config{Pkg: "pkg", Base: "http://h", Key: "tok", MaxBurst: 1, MaxBody: 1,
		Header: http.Header{"Accept": {"a/b"}, "X-Api-Key": {"hk"}}})
	req, err := c.NewRequest(context.Background(), http.MethodPost, "/p", []byte("{}"), "application/json", http.Header{"X-Api-Key": {"ek"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := req.URL.String(); got != "http://h/p" {
		t.Errorf("URL %s, want http://h/p", got)
	}
	for k, want := range map[string]string{"Accept": "a/b", "X-Api-Key": "ek", "Authorization": "Bearer tok", "Content-Type": "application/json"} {
		if got := strings.Join(req.Header.Values(k), ","); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if got := c.RedactString("tok hk"); strings.Contains(got, "tok") || strings.Contains(got, "hk") {
		t.Errorf("RedactString: %q keeps a credential", got)
	}
}

func TestExcerpt(t *testing.T) {
	if got := Excerpt([]byte("short")); got != "short" {
		t.Errorf("Excerpt(short) = %q", got)
	}
	long := strings.Repeat("x", 201)
	if got := Excerpt([]byte(long)); got != long[:200]+"…" {
		t.Errorf("Excerpt(201 bytes) = %q, want 200 bytes and …", got)
	}
}
