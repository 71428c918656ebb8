package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/internal/testkit"
)

// streamResult is what a plain HTTP client observes of one request.
type streamResult struct {
	status      int
	contentType string
	doErr       error // from Do: no response at all
	readErr     error // while reading the body
	lines       []string
	data        int // data: lines carrying a token chunk
	bad         int // data: lines that are not valid JSON
	errEvents   int
	done        bool
	longest     int
	elapsed     time.Duration
}

func observe(t *testing.T, ctx context.Context, url, body, fault string) streamResult {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if fault != "" {
		req.Header.Set(FaultHeader, fault)
	}
	start := time.Now()
	resp, err := testkit.Client.Do(req)
	var r streamResult
	if err != nil {
		r.doErr = err
		return r
	}
	defer resp.Body.Close()
	r.status, r.contentType = resp.StatusCode, resp.Header.Get("Content-Type")
	br := bufio.NewReader(resp.Body)
	for {
		l, err := br.ReadString('\n')
		l = strings.TrimRight(l, "\n")
		r.longest = max(r.longest, len(l))
		if l != "" {
			r.lines = append(r.lines, l)
			switch {
			case l == "data: [DONE]":
				r.done = true
			case strings.HasPrefix(l, "data: "):
				var v map[string]any
				if json.Unmarshal([]byte(l[6:]), &v) != nil {
					r.bad++
				} else if v["error"] != nil {
					r.errEvents++
				} else {
					r.data++
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				r.readErr = err
			}
			break
		}
	}
	r.elapsed = time.Since(start)
	return r
}

func TestFaultsStreaming(t *testing.T) {
	s := newFast(t, Options{})
	body := chatBody(s.Model(), "hi", 6, `,"stream":true`)
	url := s.URL + "/bench/chat/completions"
	for _, tc := range []struct {
		fault string
		check func(r streamResult) string
	}{
		{"500", func(r streamResult) string {
			return expect(r.status == 500 && strings.Contains(strings.Join(r.lines, ""), `"code":500`), "status 500 with the envelope")
		}},
		{"503", func(r streamResult) string { return expect(r.status == 503, "status 503") }},
		{"reset-before-headers", func(r streamResult) string { return expect(r.doErr != nil, "no response (connection reset)") }},
		{"reset-mid-stream; after=2", func(r streamResult) string {
			return expect(r.status == 200 && r.data == 2 && r.readErr != nil && !r.done, "2 chunks then a read error")
		}},
		{"cut-without-done; after=3", func(r streamResult) string {
			return expect(r.data == 3 && r.readErr == nil && !r.done, "3 chunks, a clean EOF and no [DONE]")
		}},
		{"malformed-chunk; after=1", func(r streamResult) string {
			return expect(r.bad == 1 && r.data == 6 && r.done, "one malformed line among 6 good chunks, then [DONE]")
		}},
		{"error-event; after=2", func(r streamResult) string {
			return expect(r.data == 2 && r.errEvents == 1 && r.done, "2 chunks, an error event, [DONE]")
		}},
		{"slow-drip; duration=500us", func(r streamResult) string {
			// Pieces of 8 bytes 0.5 ms apart: a lower bound on the time.
			bytes := 0
			for _, l := range r.lines {
				bytes += len(l) + 2
			}
			minTime := time.Duration(bytes/DefaultDripBytes-len(r.lines)) * 500 * time.Microsecond
			return expect(r.data == 6 && r.done && r.elapsed >= minTime, "the whole stream, dripped slowly")
		}},
		{"wrong-content-type", func(r streamResult) string {
			return expect(r.status == 200 && strings.HasPrefix(r.contentType, "text/html"), "200 text/html")
		}},
		{"oversized-line; size=300000; after=1", func(r streamResult) string {
			return expect(r.longest > 300000 && r.done, "a line over 300000 bytes")
		}},
		{"unknown-model", func(r streamResult) string {
			return expect(r.status == 404 && strings.Contains(r.lines[0], "No instance found for model"), "404 No instance found")
		}},
		{"empty-body", func(r streamResult) string { return expect(r.status == 200 && len(r.lines) == 0, "200 with no body") }},
		{"none", func(r streamResult) string { return expect(r.data == 6 && r.done, "a normal stream") }},
	} {
		// Twice: a fault is reproducible.
		for i := range 2 {
			r := observe(t, context.Background(), url, body, tc.fault)
			if msg := tc.check(r); msg != "" {
				t.Errorf("%s (run %d): %s; observed status %d, %d chunks, %d malformed, %d errors, done %v, doErr %v, readErr %v",
					tc.fault, i, msg, r.status, r.data, r.bad, r.errEvents, r.done, r.doErr, r.readErr)
			}
		}
	}
}

func expect(ok bool, want string) string {
	if ok {
		return ""
	}
	return "expected " + want
}

func TestFaultStallPastDeadline(t *testing.T) {
	// The deadline only has to come after the first two chunks, a few
	// milliseconds of schedule: 2 s leaves a loaded machine room to
	// deliver them, and the hour-long stall still outlasts it.
	s := newFast(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r := observe(t, ctx, s.URL+"/bench/chat/completions", chatBody(s.Model(), "hi", 6, `,"stream":true`), "stall; after=2; duration=1h")
	if r.data != 2 || !errors.Is(r.readErr, context.DeadlineExceeded) {
		t.Errorf("stall: %d chunks, read error %v; want 2 chunks then the client's deadline", r.data, r.readErr)
	}
}

func TestFaultsNonStreaming(t *testing.T) {
	s := newFast(t, Options{})
	body := chatBody(s.Model(), "hi", 4, "")
	url := s.URL + "/bench/chat/completions"
	valid := func(r streamResult) bool {
		var v map[string]any
		return json.Unmarshal([]byte(strings.Join(r.lines, "\n")), &v) == nil
	}
	for _, tc := range []struct {
		fault string
		ok    func(r streamResult) bool
	}{
		{"reset-mid-stream; after=2", func(r streamResult) bool { return r.readErr != nil }},
		{"cut-without-done", func(r streamResult) bool { return r.status == 200 && r.readErr == nil && !valid(r) }},
		{"malformed-chunk", func(r streamResult) bool { return r.status == 200 && !valid(r) }},
		{"error-event", func(r streamResult) bool { return r.status == 500 }},
		{"oversized-line; size=100000", func(r streamResult) bool { return valid(r) && r.longest > 100000 }},
		{"stall; duration=50ms", func(r streamResult) bool { return valid(r) && r.elapsed >= 50*time.Millisecond }},
		{"slow-drip; duration=1ms", func(r streamResult) bool { return valid(r) }},
	} {
		if r := observe(t, context.Background(), url, body, tc.fault); !tc.ok(r) {
			t.Errorf("%s: status %d, readErr %v, body %.80q", tc.fault, r.status, r.readErr, strings.Join(r.lines, ""))
		}
	}
}

func TestServerFaultEvery(t *testing.T) {
	s := newFast(t, Options{Fault: Fault{Kind: FaultStatus503}, FaultEvery: 2})
	var got []int
	for range 4 {
		resp := post(t, s.URL+"/bench/chat/completions", chatBody(s.Model(), "hi", 2, ""))
		resp.Body.Close()
		got = append(got, resp.StatusCode)
	}
	// The header overrides the server's fault, "none" included.
	resp := post(t, s.URL+"/bench/chat/completions", chatBody(s.Model(), "hi", 2, ""), FaultHeader, "none")
	resp.Body.Close()
	got = append(got, resp.StatusCode)
	if diff := cmp.Diff([]int{200, 503, 200, 503, 200}, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
}

func TestParseFault(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Fault
		err  bool
	}{
		{"", Fault{}, false},
		{"none", Fault{}, false},
		{"stall; after=3; duration=250ms", Fault{Kind: FaultStall, After: 3, Duration: 250 * time.Millisecond}, false},
		{" Oversized-Line ;size=10", Fault{Kind: FaultOversizedLine, Size: 10}, false},
		{"explode", Fault{}, true},
		{"stall; after", Fault{}, true},
		{"stall; after=x", Fault{}, true},
		{"stall; color=red", Fault{}, true},
		{"stall; duration=-1s", Fault{}, true},
	} {
		got, err := ParseFault(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseFault(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	resp := post(t, newFast(t, Options{}).URL+"/bench/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, FaultHeader, "explode")
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("bad fault header: status %d, want 400", resp.StatusCode)
	}
}

func FuzzParseFault(f *testing.F) {
	for _, s := range []string{"", "none", "500", "stall; after=2; duration=1s", "oversized-line; size=9", "x;y", "slow-drip;duration=1ms;after=-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fl, err := ParseFault(s)
		if err != nil {
			return
		}
		// What parses prints back to an equal fault.
		again, err := ParseFault(fl.String())
		if err != nil || again != fl {
			t.Errorf("ParseFault(%q) = %+v; its String %q parses to %+v, %v", s, fl, fl.String(), again, err)
		}
	})
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	s := NewServer(Options{Preset: Fast()})
	tr := &http.Transport{}
	c := &http.Client{Transport: tr}
	// A stalled stream and a long one are in flight when Close is called.
	started := make(chan struct{}, 2)
	for _, fault := range []string{"stall; after=1; duration=1h", "none"} {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, s.URL+"/bench/chat/completions",
				strings.NewReader(chatBody(s.Model(), "hi", 1_000_000, `,"stream":true`)))
			req.Header.Set(FaultHeader, fault)
			resp, err := c.Do(req)
			if err != nil {
				started <- struct{}{}
				return
			}
			br := bufio.NewReader(resp.Body)
			br.ReadString('\n')
			started <- struct{}{}
			io.Copy(io.Discard, br)
			resp.Body.Close()
		}()
	}
	testkit.RecvWithin(t, started, testkit.Patience)
	testkit.RecvWithin(t, started, testkit.Patience)
	s.Close()
	tr.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestStartStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, "127.0.0.1:0", Options{Preset: Fast()})
	if err != nil {
		t.Fatal(err)
	}
	if code := getJSON(t, s.URL+"/models", nil); code != 200 {
		t.Fatalf("GET /models: %d", code)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := testkit.Client.Get(s.URL + "/models"); err != nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Error("server still answers after its context was cancelled")
}
