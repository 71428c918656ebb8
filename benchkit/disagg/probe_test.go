package disagg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/sim"
)

func TestParseSimReport(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name       string
		body       string
		wantRemote bool
		want       PrefillCheck
	}{
		{"remote as wanted", `{"sim":{"remote_prefill":true,"instance_id":"d"}}`, true,
			PrefillCheck{Reported: true, Remote: &yes, ServedBy: "d", WantRemote: true, WantServedBy: "d", OK: &yes}},
		{"local but remote wanted", `{"sim":{"remote_prefill":false,"instance_id":"d"}}`, true,
			PrefillCheck{Reported: true, Remote: &no, ServedBy: "d", WantRemote: true, WantServedBy: "d", OK: &no}},
		{"another instance", `{"sim":{"remote_prefill":false,"instance_id":"x"}}`, false,
			PrefillCheck{Reported: true, Remote: &no, ServedBy: "x", WantServedBy: "d", OK: &no}},
		{"no sim block", `{"choices":[]}`, true, PrefillCheck{WantRemote: true, WantServedBy: "d"}},
	}
	for _, tc := range tests {
		got, err := parseSimReport([]byte(tc.body), PrefillCheck{WantRemote: tc.wantRemote, WantServedBy: "d"})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got.Note == "" {
			t.Errorf("%s: no note", tc.name)
		}
		got.Note = ""
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if _, err := parseSimReport([]byte("<html>"), PrefillCheck{}); err == nil {
		t.Error("an HTML body decoded")
	}
}

func FuzzParseSimReport(f *testing.F) {
	f.Add([]byte(`{"sim":{"remote_prefill":true,"instance_id":"d"}}`))
	f.Add([]byte(`{"sim":{"remote_prefill":null}}`))
	f.Add([]byte(`{"sim":[]}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"sim":{"remote_prefill":false,"instance_id":7}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		chk, err := parseSimReport(body, PrefillCheck{WantRemote: true, WantServedBy: "d"})
		if err != nil {
			return
		}
		if chk.Reported != (chk.OK != nil) || chk.Reported != (chk.Remote != nil) {
			t.Errorf("reported %v with ok %v and remote %v", chk.Reported, chk.OK, chk.Remote)
		}
		if chk.OK != nil && *chk.OK != (*chk.Remote && chk.ServedBy == "d") {
			t.Errorf("ok %v for remote %v served by %q", *chk.OK, *chk.Remote, chk.ServedBy)
		}
	})
}

// proxied puts a reverse proxy in front of s whose responses pass
// through edit, and returns a client of the proxy.
func proxied(t *testing.T, s *sim.Server, edit func(*http.Response) error) *exo.Client {
	t.Helper()
	target, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(target)
	p.ModifyResponse = edit
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	c, err := exo.New(front.URL, &exo.Options{PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRunFailsWhenPrefillRanLocally(t *testing.T) {
	s, _ := simCluster(t, sim.Options{})
	// An engine that reports every prefill as local.
	c := proxied(t, s, func(r *http.Response) error {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		b = bytes.ReplaceAll(b, []byte(`"remote_prefill":true`), []byte(`"remote_prefill":false`))
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		r.Header.Set("Content-Length", fmt.Sprint(len(b)))
		return nil
	})
	d := newBenchmark(t, s, c)
	res, err := d.Run(context.Background(), benchkit.Plan{PP: []int{2000}, TG: []int{4}})
	if !errors.Is(err, ErrPrefillNotRemote) || !strings.Contains(err.Error(), "ran locally") {
		t.Fatalf("err = %v, want ErrPrefillNotRemote", err)
	}
	if len(res.Requests) != 1 || res.Requests[0].Failed() {
		t.Errorf("rows %+v", res.Requests)
	}
	assertClean(t, c)
}

func TestRunSaysWhenTheEngineCannotTell(t *testing.T) {
	s, _ := simCluster(t, sim.Options{})
	// An engine that does not label itself simulated, as exo.
	c := proxied(t, s, func(r *http.Response) error { r.Header.Del(simHeader); return nil })
	d := newBenchmark(t, s, c)
	res, err := d.Run(context.Background(), benchkit.Plan{PP: []int{2000}, TG: []int{4}})
	if err != nil {
		t.Fatal(err)
	}
	assertClean(t, c)
	if len(res.Phases) != 1 {
		t.Fatalf("phases %+v", res.Phases)
	}
	if chk := res.Phases[0].Check; chk == nil || chk.Reported || chk.OK != nil || !strings.Contains(chk.Note, "does not report where") {
		t.Errorf("check %+v", chk)
	}
}
