package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/adaptertest"
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
// a fresh controlled clock, to one server, and compares the bytes the server
// received and the Results.
func TestPrepareSendsWhatCompleteSends(t *testing.T) {
	t.Setenv("TEST_OPENAI_PREPARE_KEY", "sk-prepare-0123456789")
	temp := 0.0
	full := engine.Request{
		Model:       "meta-llama/Llama-3.1-8B-Instruct",
		Messages:    []engine.Message{{Role: "user", Content: "Say something."}},
		MaxTokens:   8,
		MinTokens:   8,
		IgnoreEOS:   true,
		Stream:      true,
		Temperature: &temp,
		Header:      http.Header{"X-Request": {"one"}},
		Extra:       map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": false}},
	}
	unstreamed := engine.Request{Model: fixtureModel, MaxTokens: 8, IgnoreEOS: true}
	cases := []struct {
		name  string
		opts  Options
		req   engine.Request
		ctype string
		body  []byte
		warns int
	}{
		{"stream with key, headers and extra", Options{APIKeyEnv: "TEST_OPENAI_PREPARE_KEY", Header: http.Header{"X-Team": {"bench"}}},
			full, "text/event-stream", readTestdata(t, "vllm_continuous.sse"), 0},
		{"not streamed", Options{}, unstreamed, "application/json", readTestdata(t, "vllm_nonstream.json"), 0},
		{"strict flavour drops fields with warnings", Options{Flavour: FlavourOpenAI},
			full, "text/event-stream", readTestdata(t, "vllm_continuous.sse"), 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &dumper{ctype: tc.ctype, body: tc.body}
			srv := serve(t, d)
			run := func(send func(c *Client, ctx context.Context) (engine.Result, error)) (string, engine.Result, []time.Time) {
				o := tc.opts
				o.Now = adaptertest.NewStepClock().Now
				c := newClient(t, srv.URL, &o)
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
	d := &dumper{ctype: "application/json", body: readTestdata(t, "vllm_nonstream.json")}
	srv := serve(t, d)
	clk := adaptertest.NewStepClock()
	c := newClient(t, srv.URL, &Options{Now: clk.Now})
	hooks := 0
	ctx := engine.WithSendHook(context.Background(), func(time.Time) { hooks++ })
	ps := make([]engine.Prepared, 3)
	for i := range ps {
		p, err := c.Prepare(ctx, engine.Request{Model: "m", MaxTokens: 8})
		if err != nil {
			t.Fatal(err)
		}
		ps[i] = p
	}
	reads := clk.Readings()
	if n := len(d.got()); n != 0 || reads != 0 || hooks != 0 {
		t.Fatalf("after 3 Prepare calls: %d requests sent, %d clock readings, %d hook calls; want 0, 0, 0", n, reads, hooks)
	}
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
	d := &dumper{ctype: "application/json", body: readTestdata(t, "vllm_nonstream.json")}
	c := newClient(t, serve(t, d).URL, nil)
	p, err := c.Prepare(context.Background(), engine.Request{Model: "m", MaxTokens: 8})
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

func TestPrepareErrorsSendNothing(t *testing.T) {
	d := &dumper{ctype: "application/json", body: readTestdata(t, "vllm_nonstream.json")}
	c := newClient(t, serve(t, d).URL, nil)
	for _, tc := range []struct {
		name string
		req  engine.Request
	}{
		{"unencodable extra", engine.Request{Model: "m", Extra: map[string]any{"ch": make(chan int)}}},
		{"negative max tokens", engine.Request{Model: "m", MaxTokens: -1}},
		{"min above max", engine.Request{Model: "m", MaxTokens: 4, MinTokens: 5}},
	} {
		p, err := c.Prepare(context.Background(), tc.req)
		var ee *engine.Error
		if !errors.As(err, &ee) || ee.Kind != engine.KindOther || p != nil {
			t.Errorf("%s: Prepare = %v, %v; want a nil Prepared and an *engine.Error of kind %q", tc.name, p, err, engine.KindOther)
			continue
		}
		if _, cerr := c.Complete(context.Background(), tc.req); cerr == nil || cerr.Error() != err.Error() {
			t.Errorf("%s: Complete error %v, want Prepare's %v", tc.name, cerr, err)
		}
	}
	if n := len(d.got()); n != 0 {
		t.Errorf("server got %d requests, want 0", n)
	}
}

// TestPreparedSendCanceled cancels Send's context once the request is out:
// Send runs under its own context, not Prepare's.
func TestPreparedSendCanceled(t *testing.T) {
	block := make(chan struct{})
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer close(block)
	c := newClient(t, srv.URL, nil)
	p, err := c.Prepare(context.Background(), engine.Request{Model: "m", MaxTokens: 8})
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
	if _, err := p.Send(ctx); engine.KindOf(err) != engine.KindCanceled {
		t.Errorf("Send cancelled in flight: %v (kind %q), want kind %q", err, engine.KindOf(err), engine.KindCanceled)
	}
}
