package exo

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/internal/hostile"
	"github.com/inferbench/inferbench/internal/httpsafe"
)

// hostileClient returns a Client of srv with test backoffs.
func hostileClient(t *testing.T, srv *hostile.Server) *Client {
	t.Helper()
	c, err := New(srv.URL, fastOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// TestBenchNeverRedirected: a 301, 302, 307 or 308 on the bench endpoint
// is a status error naming the redirect and its target; nothing reaches
// the target.
func TestBenchNeverRedirected(t *testing.T) {
	other := hostile.New(t, hostile.JSON(200, `{}`))
	for _, code := range []int{301, 302, 307, 308} {
		for _, stream := range []bool{false, true} {
			src := hostile.New(t, hostile.Redirect(code, other.URL+BenchPath))
			_, err := hostileClient(t, src).Complete(context.Background(), benchRequest(stream))
			var se *engine.StatusError
			if engine.KindOf(err) != engine.KindStatus || !errors.As(err, &se) || se.Code != code {
				t.Fatalf("%d stream=%v: %v (kind %s), want a status error %d", code, stream, err, engine.KindOf(err), code)
			}
			if !strings.Contains(err.Error(), "redirect to "+other.URL+BenchPath) {
				t.Errorf("%d: %q, want the target named", code, err)
			}
			if rs := src.Requests(); len(rs) != 1 || rs[0].Method != http.MethodPost {
				t.Errorf("%d: the source saw %+v, want one POST", code, rs)
			}
		}
	}
	if n := other.Count(); n != 0 {
		t.Errorf("%d requests reached the redirect's target", n)
	}
}

// TestControlPlaneRedirects: a control-plane call follows a redirect within
// the API node's origin and refuses, without retrying, one to another.
func TestControlPlaneRedirects(t *testing.T) {
	other := hostile.New(t, hostile.JSON(200, `"stolen"`))
	src := hostile.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/node_id":
			hostile.Redirect(http.StatusFound, "/api/node_id")(w, r)
		case "/api/node_id":
			hostile.JSON(200, `"node-a"`)(w, r)
		case "/v1/feature-flags":
			hostile.Redirect(http.StatusPermanentRedirect, other.URL+"/v1/feature-flags")(w, r)
		}
	}))
	c := hostileClient(t, src)
	if id, err := c.NodeID(context.Background()); err != nil || id != "node-a" {
		t.Errorf("same origin: %q, %v; want the redirect followed", id, err)
	}
	_, err := c.Disaggregation(context.Background())
	var ae *APIError
	var re *httpsafe.RedirectError
	if !errors.As(err, &ae) || ae.Attempts != 1 || ae.StatusCode != 308 || !errors.As(err, &re) || !strings.Contains(err.Error(), other.URL) {
		t.Fatalf("cross origin: %v, want one attempt refused with the 308 named", err)
	}
	if n := other.Count(); n != 0 {
		t.Errorf("%d requests reached another origin", n)
	}
}

// TestControlPlaneRetryAfterBounded: a 503 with Retry-After: 100000 ends a
// control-plane call at once when even the capped wait (30 s) would
// outlast its context's deadline; the error names the 503 and the
// Retry-After.
func TestControlPlaneRetryAfterBounded(t *testing.T) {
	srv := hostile.New(t, hostile.RetryAfter(http.StatusServiceUnavailable, "100000"))
	ctx, cancel := context.WithTimeout(context.Background(), httpsafe.MaxRetryAfter/3)
	defer cancel()
	_, err := hostileClient(t, srv).NodeID(ctx)
	var ae *APIError
	var se *engine.StatusError
	if !errors.As(err, &ae) || ae.StatusCode != 503 || ae.Attempts != 1 || !errors.As(err, &se) || !strings.Contains(err.Error(), "Retry-After") {
		t.Fatalf("%v, want one attempt ending with the 503 and its Retry-After", err)
	}
	if ctx.Err() != nil {
		t.Errorf("the call ran into its deadline (%v) instead of giving up at once", ctx.Err())
	}
	if n := srv.Count(); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}

	// With time enough for the waits, a Retry-After is waited, then retried.
	short := hostile.New(t, hostile.RetryAfter(http.StatusServiceUnavailable, "0"))
	long, cancel2 := context.WithTimeout(context.Background(), time.Hour)
	defer cancel2()
	if _, err := hostileClient(t, short).NodeID(long); !errors.As(err, &ae) || ae.Attempts != DefaultRetryMax+1 {
		t.Errorf("Retry-After 0: %v, want %d attempts", err, DefaultRetryMax+1)
	}
}
