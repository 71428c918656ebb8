package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/openai"
)

// completionReply is the answer of the skew server to every POST: a
// minimal non-streaming chat completion both adapters accept.
const completionReply = `{"id":"chatcmpl-perf","object":"chat.completion","created":1767225600,"model":"perf","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":1,"total_tokens":13}}`

// loopback is an HTTP server on 127.0.0.1 with a count of the
// connections it accepted.
type loopback struct {
	URL   string
	srv   *http.Server
	conns atomic.Int64
}

func listen(h http.Handler) (*loopback, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on loopback: %w", err)
	}
	l := &loopback{URL: "http://" + ln.Addr().String()}
	l.srv = &http.Server{Handler: h, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			l.conns.Add(1)
		}
	}}
	go l.srv.Serve(ln)
	return l, nil
}

func (l *loopback) Close() { l.srv.Close() }

// skewServer stamps the arrival of every POST carrying an X-Index header
// (when its handler starts, after the request headers have been read, the
// same for every method) as a monotonic offset from base, and keeps a dump
// of the first POST so that the raw method can send the same bytes.
type skewServer struct {
	base     time.Time
	arrivals []atomic.Int64 // offset + 1; 0 means not arrived
	mu       sync.Mutex
	dump     []byte
}

func (s *skewServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Since(s.base)
	if r.Method != http.MethodPost {
		io.WriteString(w, "{}") // prewarm: GET /node_id, GET /v1/models
		return
	}
	if i, err := strconv.Atoi(r.Header.Get("X-Index")); err == nil && i >= 0 && i < len(s.arrivals) {
		s.arrivals[i].Store(int64(at) + 1)
	}
	s.mu.Lock()
	if s.dump == nil {
		if d, err := httputil.DumpRequest(r, true); err == nil {
			s.dump = d
		}
	}
	s.mu.Unlock()
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, completionReply)
}

// skewMethod sends burst request i one way.
type skewMethod struct {
	name string
	// open opens n connections before the bursts of size n.
	open func(ctx context.Context, n int) error
	// each, when set, readies request i in its worker before the release
	// (concurrency.BurstOptions.Prepare).
	each func(ctx context.Context, i int) error
	send concurrency.SendFunc[struct{}]
	// target marks the default path, which the n = 64 target applies to.
	target bool
}

// burstStats is what one method measured at one n, over all its bursts.
type burstStats struct {
	spreads []time.Duration // per burst: max − min arrival
	skews   []time.Duration // per request: arrival − min arrival of its burst
	rtts    []time.Duration // per request: Done − Sent
	pre     []time.Duration // per request: Sent − Dispatch
	failed  int
}

// adapter is what the skew section needs of an engine adapter.
type adapter interface {
	engine.Engine
	engine.Prewarmer
	engine.Preparer
}

// runSkew measures arrival skew at the server for bursts through the exo
// and openai adapters, each both ways (requests prepared before the
// release, as benchkit sends them, and Complete called after it, as an
// engine without engine.Preparer is sent), and through raw writes on
// pre-dialed sockets, the methods interleaved burst by burst so that drifts
// of the shared machine fall on all of them alike.
func runSkew(ctx context.Context, cfg config, rep *report) error {
	maxN := 0
	for _, n := range cfg.skewNs {
		maxN = max(maxN, n)
	}
	ss := &skewServer{base: time.Now(), arrivals: make([]atomic.Int64, maxN)}
	srv, err := listen(ss)
	if err != nil {
		return err
	}
	defer srv.Close()

	ex, err := exo.New(srv.URL, &exo.Options{MaxBurst: maxN})
	if err != nil {
		return err
	}
	defer ex.CloseIdleConnections()
	oa, err := openai.New(srv.URL, &openai.Options{MaxBurst: maxN})
	if err != nil {
		return err
	}
	defer oa.CloseIdleConnections()

	msgs := []engine.Message{{Role: "user", Content: "Measure the dispatch skew of this request, please."}}
	reqs := make([]engine.Request, maxN)
	for i := range reqs {
		reqs[i] = engine.Request{Model: "perf", Messages: msgs, MaxTokens: 1,
			Header: http.Header{"X-Index": {strconv.Itoa(i)}}}
	}
	// One request through the exo adapter gives the bytes the raw method
	// writes (the openai adapter's body differs by a few fields).
	if _, err := ex.Complete(ctx, reqs[0]); err != nil {
		return fmt.Errorf("first exo request: %w", err)
	}
	ss.mu.Lock()
	dump := ss.dump
	ss.mu.Unlock()
	if !bytes.Contains(dump, []byte("X-Index: 0\r\n")) {
		return fmt.Errorf("dump of the first request lacks its X-Index header: %q", dump)
	}
	raw := make([][]byte, maxN)
	for i := range raw {
		raw[i] = bytes.Replace(dump, []byte("X-Index: 0\r\n"), []byte("X-Index: "+strconv.Itoa(i)+"\r\n"), 1)
	}
	rc := newRawConns(srv.URL[len("http://"):])
	defer rc.close()

	prepared := func(name string, e adapter) skewMethod {
		ps := make([]engine.Prepared, maxN)
		return skewMethod{name: name, open: e.Prewarm, target: true,
			each: func(ctx context.Context, i int) error {
				var err error
				ps[i], err = e.Prepare(ctx, reqs[i])
				return err
			},
			send: func(ctx context.Context, i int, mark func(time.Time)) (struct{}, error) {
				_, err := ps[i].Send(engine.WithSendHook(ctx, mark))
				return struct{}{}, err
			}}
	}
	complete := func(name string, e adapter) skewMethod {
		return skewMethod{name: name, open: e.Prewarm,
			send: func(ctx context.Context, i int, mark func(time.Time)) (struct{}, error) {
				_, err := e.Complete(engine.WithSendHook(ctx, mark), reqs[i])
				return struct{}{}, err
			}}
	}
	methods := []skewMethod{
		{name: "raw", open: rc.dial, send: func(ctx context.Context, i int, mark func(time.Time)) (struct{}, error) {
			return struct{}{}, rc.roundTrip(i, raw[i], mark)
		}},
		prepared("exo", ex),
		prepared("openai", oa),
		complete("exo Complete", ex),
		complete("openai Complete", oa),
	}

	for _, n := range cfg.skewNs {
		for _, m := range methods {
			if err := m.open(ctx, n); err != nil {
				return fmt.Errorf("%s: opening %d connections: %w", m.name, n, err)
			}
		}
		conns := srv.conns.Load()
		stats := make([]burstStats, len(methods))
		for range cfg.skewBursts {
			for k, m := range methods {
				if err := ctx.Err(); err != nil {
					return err
				}
				for i := range n {
					ss.arrivals[i].Store(0)
				}
				res := concurrency.Burst(ctx, n, m.send, &concurrency.BurstOptions{Prepare: m.each})
				st := &stats[k]
				st.failed += res.Failed
				if res.Failed > 0 {
					continue
				}
				at := make([]time.Duration, n)
				for i := range n {
					a := ss.arrivals[i].Load()
					if a == 0 {
						return fmt.Errorf("%s n=%d: request %d answered but its arrival was not stamped", m.name, n, i)
					}
					at[i] = time.Duration(a - 1)
				}
				lo, hi := at[0], at[0]
				for _, a := range at {
					lo, hi = min(lo, a), max(hi, a)
				}
				st.spreads = append(st.spreads, hi-lo)
				for i, a := range at {
					st.skews = append(st.skews, a-lo)
					q := res.Requests[i]
					st.rtts = append(st.rtts, q.Done-q.Sent)
					st.pre = append(st.pre, q.Sent-q.Dispatch)
				}
			}
		}
		dials := srv.conns.Load() - conns
		floor := stats[0]
		for k, m := range methods {
			st := stats[k]
			if st.failed > 0 {
				rep.skip("skew %s n=%d: %d requests failed", m.name, n, st.failed)
			}
			if len(st.spreads) == 0 {
				continue
			}
			var note string
			if dials > 0 {
				note = fmt.Sprintf("%d connections were opened during the bursts (all methods together)", dials)
			}
			if n == 1 {
				v := float64(concurrency.SummarizeDurations(st.rtts).P50)
				row := Row{Section: "skew", Name: fmt.Sprintf("%s n=1 round trip p50", m.name), Value: v, Unit: "ns", Note: note}
				if k > 0 && len(floor.rtts) > 0 {
					ref := float64(concurrency.SummarizeDurations(floor.rtts).P50)
					row.Ref, row.RefName, row.Ratio = ptr(ref), "raw", ptr(v/ref)
				}
				rep.add(row)
				// The client's work between the release and the first
				// byte: what a prepared request no longer does there.
				rep.add(Row{Section: "skew", Name: fmt.Sprintf("%s n=1 release to send p50", m.name),
					Value: float64(concurrency.SummarizeDurations(st.pre).P50), Unit: "ns"})
				continue
			}
			spread := float64(concurrency.SummarizeDurations(st.spreads).P50)
			p99 := float64(concurrency.SummarizeDurations(st.skews).P99)
			row := Row{Section: "skew", Name: fmt.Sprintf("%s n=%d arrival spread p50 of %d bursts", m.name, n, len(st.spreads)), Value: spread, Unit: "ns", Note: note}
			row99 := Row{Section: "skew", Name: fmt.Sprintf("%s n=%d arrival skew p99", m.name, n), Value: p99, Unit: "ns"}
			if k > 0 && len(floor.spreads) > 0 {
				fs := float64(concurrency.SummarizeDurations(floor.spreads).P50)
				f99 := float64(concurrency.SummarizeDurations(floor.skews).P99)
				row.Ref, row.RefName, row.Ratio = ptr(fs), "raw", ptr(spread/fs)
				row99.Ref, row99.RefName, row99.Ratio = ptr(f99), "raw", ptr(p99/f99)
				if n == 64 && m.target {
					row.Target, row.Met = target("≤ 1.3× raw", spread/fs <= 1.3)
				}
			}
			rep.add(row)
			rep.add(row99)
		}
	}
	return nil
}

// rawConns are pre-dialed sockets that write request bytes directly: the
// floor any HTTP client can reach on this machine.
type rawConns struct {
	addr  string
	conns []net.Conn
	rds   []*bufio.Reader
}

func newRawConns(addr string) *rawConns { return &rawConns{addr: addr} }

// dial opens connections until there are n.
func (r *rawConns) dial(ctx context.Context, n int) error {
	var d net.Dialer
	for len(r.conns) < n {
		c, err := d.DialContext(ctx, "tcp", r.addr)
		if err != nil {
			return err
		}
		r.conns = append(r.conns, c)
		r.rds = append(r.rds, bufio.NewReader(c))
	}
	return nil
}

// roundTrip writes b on connection i, marking the instant before the
// write, and reads the whole response.
func (r *rawConns) roundTrip(i int, b []byte, mark func(time.Time)) error {
	mark(time.Now())
	if _, err := r.conns[i].Write(b); err != nil {
		return err
	}
	resp, err := http.ReadResponse(r.rds[i], nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d, expected 200", resp.StatusCode)
	}
	return err
}

func (r *rawConns) close() {
	for _, c := range r.conns {
		c.Close()
	}
}
