package exo

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/internal/testkit"
)

// dumper answers every request with a canned body and keeps the wire dump
// of each request it got (request line, headers, body).
type dumper struct {
	mu    sync.Mutex
	dumps []string
	ctype string
	body  []byte
}

func (d *dumper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := httputil.DumpRequest(r, true)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	d.mu.Lock()
	d.dumps = append(d.dumps, string(b))
	d.mu.Unlock()
	w.Header().Set("Content-Type", d.ctype)
	_, _ = w.Write(d.body)
}

func (d *dumper) got() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dumps...)
}

// countingClock is a stepClock that counts its readings.
type countingClock struct {
	stepClock
	reads atomic.Int64
}

func (c *countingClock) Now() time.Time {
	c.reads.Add(1)
	return c.stepClock.Now()
}

// idPattern matches the X-Request-Id header of a dumped request.
var idPattern = regexp.MustCompile(`X-Request-Id: ib-[0-9a-f]{24}`)

// errorText compares errors by their messages.
var errorText = cmp.Comparer(func(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Error() == b.Error()
})

// TestPrepareSendsWhatCompleteSends sends each request once through
// Complete and once through Prepare then Send, each on a fresh client with
// a fresh controlled clock, and compares the bytes the server received and
// the Results.
func TestPrepareSendsWhatCompleteSends(t *testing.T) {
	temp := 0.5
	withExtra := benchRequest(false)
	withExtra.Header = http.Header{"X-Index": {"7"}, "Authorization": {"Bearer t"}}
	withExtra.Extra = map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": false}}
	withExtra.Temperature = &temp
	chat := benchRequest(false)
	chat.IgnoreEOS, chat.MinTokens = false, 3 // the chat path, and a warning

	cases := []struct {
		name  string
		req   engine.Request
		ctype string
		body  []byte
		warns int
	}{
		{"bench json", benchRequest(false), "application/json", fixture(t, "bench_response.json"), 0},
		{"bench stream", benchRequest(true), "text/event-stream", fixture(t, "stream_bench.sse"), 0},
		{"headers and extra", withExtra, "application/json", fixture(t, "bench_response.json"), 0},
		{"chat path with warning", chat, "application/json", fixture(t, "bench_response.json"), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// One server, so that the Host header is the same; a client
			// each, so that each starts from the same clock reading.
			d := &dumper{ctype: tc.ctype, body: tc.body}
			srv := httptest.NewServer(d)
			defer srv.Close()
			run := func(send func(c *Client, ctx context.Context) (engine.Result, error)) (string, engine.Result, []time.Time) {
				opts := fastOptions()
				opts.Now = newStepClock().Now
				c, err := New(srv.URL, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseIdleConnections()
				before := len(d.got())
				var hooked []time.Time
				ctx := engine.WithSendHook(context.Background(), func(t time.Time) { hooked = append(hooked, t) })
				res, err := send(c, ctx)
				if err != nil {
					t.Fatal(err)
				}
				dumps := d.got()[before:]
				if len(dumps) != 1 {
					t.Fatalf("server got %d requests, want 1", len(dumps))
				}
				return dumps[0], res, hooked
			}
			wantDump, wantRes, wantHook := run(func(c *Client, ctx context.Context) (engine.Result, error) {
				return c.Complete(ctx, tc.req)
			})
			gotDump, gotRes, gotHook := run(func(c *Client, ctx context.Context) (engine.Result, error) {
				p, err := c.Prepare(ctx, tc.req)
				if err != nil {
					return engine.Result{}, err
				}
				return p.Send(ctx)
			})
			// Each request has its own id; apart from it, the two are
			// the same.
			if !idPattern.MatchString(wantDump) || wantRes.RequestID == gotRes.RequestID ||
				!strings.Contains(wantDump, "X-Request-Id: "+wantRes.RequestID+"\r\n") || !strings.Contains(gotDump, "X-Request-Id: "+gotRes.RequestID+"\r\n") {
				t.Errorf("request ids %q and %q: want two new ids, each the X-Request-Id its request carried", wantRes.RequestID, gotRes.RequestID)
			}
			wantDump, gotDump = idPattern.ReplaceAllString(wantDump, "X-Request-Id: ID"), idPattern.ReplaceAllString(gotDump, "X-Request-Id: ID")
			gotRes.RequestID = wantRes.RequestID
			if diff := cmp.Diff(wantDump, gotDump); diff != "" {
				t.Errorf("request on the wire, Complete (-) vs Prepare+Send (+):\n%s", diff)
			}
			if diff := cmp.Diff(wantRes, gotRes, errorText); diff != "" {
				t.Errorf("Result, Complete (-) vs Prepare+Send (+):\n%s", diff)
			}
			if diff := cmp.Diff(wantHook, gotHook); diff != "" {
				t.Errorf("send hook instants, Complete (-) vs Prepare+Send (+):\n%s", diff)
			}
			if len(gotRes.Warnings) != tc.warns {
				t.Errorf("Prepare+Send warnings %v, want %d", gotRes.Warnings, tc.warns)
			}
			if len(gotHook) != 1 || !gotHook[0].Equal(gotRes.Trace.Start) {
				t.Errorf("send hook got %v, want once with Trace.Start %v", gotHook, gotRes.Trace.Start)
			}
		})
	}
}

// TestPrepareDoesNoIO checks that Prepare neither sends, nor reads the
// clock, nor calls the send hook: all of that belongs to Send.
func TestPrepareDoesNoIO(t *testing.T) {
	d := &dumper{ctype: "application/json", body: fixture(t, "bench_response.json")}
	opts := fastOptions()
	clk := &countingClock{stepClock: *newStepClock()}
	opts.Now = clk.Now
	c, _ := newTestClient(t, d, opts)
	hooks := 0
	ctx := engine.WithSendHook(context.Background(), func(time.Time) { hooks++ })
	ps := make([]engine.Prepared, 3)
	for i := range ps {
		p, err := c.Prepare(ctx, benchRequest(false))
		if err != nil {
			t.Fatal(err)
		}
		ps[i] = p
	}
	if n := len(d.got()); n != 0 || clk.reads.Load() != 0 || hooks != 0 {
		t.Fatalf("after 3 Prepare calls: %d requests sent, %d clock readings, %d hook calls; want 0, 0, 0", n, clk.reads.Load(), hooks)
	}
	// Sent in reverse order: each Prepared is independent of the others.
	for i := len(ps) - 1; i >= 0; i-- {
		if _, err := ps[i].Send(ctx); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	if n := len(d.got()); n != 3 || hooks != 3 {
		t.Errorf("after 3 Sends: %d requests sent, %d hook calls; want 3, 3", n, hooks)
	}
}

func TestPreparedSendTwice(t *testing.T) {
	d := &dumper{ctype: "application/json", body: fixture(t, "bench_response.json")}
	c, _ := newTestClient(t, d, nil)
	p, err := c.Prepare(context.Background(), benchRequest(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := p.Send(context.Background())
	if !errors.Is(err, engine.ErrAlreadySent) || engine.KindOf(err) != engine.KindOther {
		t.Errorf("second Send: error %v (kind %q), want one wrapping ErrAlreadySent of kind %q", err, engine.KindOf(err), engine.KindOther)
	}
	if !res.Trace.Start.IsZero() {
		t.Errorf("second Send has a trace %+v, want none", res.Trace)
	}
	if n := len(d.got()); n != 1 {
		t.Errorf("server got %d requests, want 1", n)
	}
}

// TestPreparedSendOnceUnderRace sends one Prepared from several goroutines
// at once: exactly one goes out.
func TestPreparedSendOnceUnderRace(t *testing.T) {
	d := &dumper{ctype: "application/json", body: fixture(t, "bench_response.json")}
	c, _ := newTestClient(t, d, nil)
	p, err := c.Prepare(context.Background(), benchRequest(false))
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, errs[i] = p.Send(context.Background()) })
	}
	testkit.WaitWithin(t, &wg, testkit.Patience)
	ok, twice := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, engine.ErrAlreadySent):
			twice++
		default:
			t.Errorf("Send: %v", err)
		}
	}
	if ok != 1 || twice != n-1 || len(d.got()) != 1 {
		t.Errorf("%d sends succeeded, %d refused, %d reached the server; want 1, %d, 1", ok, twice, len(d.got()), n-1)
	}
}

func TestPrepareErrorSendsNothing(t *testing.T) {
	d := &dumper{ctype: "application/json", body: fixture(t, "bench_response.json")}
	c, _ := newTestClient(t, d, nil)
	req := benchRequest(false)
	req.Extra = map[string]any{"callback": func() {}} // json.Marshal refuses a func
	p, err := c.Prepare(context.Background(), req)
	var ee *engine.Error
	if !errors.As(err, &ee) || ee.Kind != engine.KindOther || p != nil {
		t.Errorf("Prepare = %v, %v; want a nil Prepared and an *engine.Error of kind %q", p, err, engine.KindOther)
	}
	res, cerr := c.Complete(context.Background(), req)
	if cerr == nil || cerr.Error() != err.Error() {
		t.Errorf("Complete error %v, want Prepare's %v", cerr, err)
	}
	if !res.Trace.Start.IsZero() {
		t.Errorf("Complete with an unencodable body has a trace %+v, want none", res.Trace)
	}
	if n := len(d.got()); n != 0 {
		t.Errorf("server got %d requests, want 0", n)
	}
}

// TestPreparedSendCanceled cancels Send's context, not Prepare's: Send runs
// under its own.
func TestPreparedSendCanceled(t *testing.T) {
	block := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	c, _ := newTestClient(t, h, nil)
	defer close(block)
	p, err := c.Prepare(context.Background(), benchRequest(false))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sent := make(chan struct{})
	ctx = engine.WithSendHook(ctx, func(time.Time) { close(sent) })
	go func() {
		<-sent
		cancel()
	}()
	_, err = p.Send(ctx)
	if engine.KindOf(err) != engine.KindCanceled {
		t.Errorf("Send cancelled in flight: %v (kind %q), want kind %q", err, engine.KindOf(err), engine.KindCanceled)
	}
}
