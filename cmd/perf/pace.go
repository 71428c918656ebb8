package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// paceEnv, set in the environment, makes the perf binary serve paced
// streams instead of measuring (see servePace); the itl section starts
// itself that way so that the server it measures against runs in another
// process, on a Go scheduler of its own.
const paceEnv = "INFERBENCH_PERF_PACE_SERVER"

// paceServer streams chunks on a schedule, one every gap, flushing each,
// and records for each Flush the wall-clock instants just before it was
// called and just after it returned, by the request's X-Req: the bytes
// went to the kernel between the two. The request's X-Chunks and X-Gap
// headers set the schedule. GET /flushes returns the recorded pairs (Unix
// nanoseconds by request id, as JSON) and forgets them.
type paceServer struct {
	mu      sync.Mutex
	flushes map[string][][2]int64
	next    atomic.Int64
}

// paceID is the response id the openai shape's chunks carry; a request
// without X-Req gets its own id in its place, so that a client that sets
// no per-request header (benchkit.Load) finds its flushes by response id.
const paceID = "chatcmpl-8f1b2c3d4e5f40718293a4b5c6d7e8f9"

func (s *paceServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		if r.URL.Path == "/flushes" {
			s.mu.Lock()
			fl := s.flushes
			s.flushes = map[string][][2]int64{}
			s.mu.Unlock()
			json.NewEncoder(w).Encode(fl)
			return
		}
		io.WriteString(w, "{}")
		return
	}
	io.Copy(io.Discard, r.Body)
	chunks, err1 := strconv.Atoi(r.Header.Get("X-Chunks"))
	gap, err2 := time.ParseDuration(r.Header.Get("X-Gap"))
	sh := shape(r.Header.Get("X-Shape"))
	id, ownID := r.Header.Get("X-Req"), false
	if id == "" && sh == "openai" {
		id, ownID = "load-"+strconv.FormatInt(s.next.Add(1), 10), true
	}
	fl, ok := w.(http.Flusher)
	if !ok || (sh != "exo" && sh != "openai") || err1 != nil || err2 != nil || chunks < 1 {
		http.Error(w, "need a flusher, X-Shape exo or openai, X-Chunks and X-Gap", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	// Each chunk goes a gap after the previous one was flushed, not on a
	// fixed grid: after a late chunk (this process's own collector, the
	// host's scheduler) the next does not catch up, which would bring two
	// chunks closer together than the gap the client is measured at.
	next := time.Now()
	done := 0
	for j := range chunks {
		next = next.Add(gap)
		time.Sleep(time.Until(next))
		k := chunkTokens(j)
		done += k
		ev := sh.chunkEvent(" tok", done, 64, true, j == chunks-1)
		if ownID {
			ev = strings.Replace(ev, paceID, id, 1)
		}
		io.WriteString(w, ev)
		// CLOCK_REALTIME, which the measuring process reads too. The
		// instant after Flush alone is late whenever this goroutine waits
		// for a P after the write's system call (up to 0.4 ms on two
		// shared cores), the one before alone early by the write path.
		before := time.Now().UnixNano()
		fl.Flush()
		after := time.Now()
		s.mu.Lock() // stored before the next write, so before the client can have read [DONE]
		s.flushes[id] = append(s.flushes[id], [2]int64{before, after.UnixNano()})
		s.mu.Unlock()
		next = after
		if r.Context().Err() != nil {
			return
		}
	}
	io.WriteString(w, sh.tail(64, done))
	fl.Flush()
}

// servePace is the pace server process: it listens on loopback, writes
// its URL as the first line of stdout and serves until stdin reaches its
// end (the measuring process closed it or exited). It returns the exit
// status.
func servePace(stdin io.Reader, stdout, stderr io.Writer) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(stderr, "perf pace server:", err)
		return 1
	}
	srv := &http.Server{Handler: &paceServer{flushes: map[string][][2]int64{}}}
	go srv.Serve(ln)
	fmt.Fprintf(stdout, "http://%s\n", ln.Addr())
	io.Copy(io.Discard, stdin)
	srv.Close()
	return 0
}

// paceProcess is a pace server running in a child process.
type paceProcess struct {
	URL   string
	cmd   *exec.Cmd
	stdin io.Closer
	flc   http.Client
}

// startPace starts this binary again as a pace server (paceEnv set) and
// waits for its URL.
func startPace(ctx context.Context) (*paceProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this binary to start the pace server: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), paceEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the pace server: %w", err)
	}
	p := &paceProcess{cmd: cmd, stdin: stdin}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(s)
		io.Copy(io.Discard, stdout)
	}()
	select {
	case s := <-line:
		if !strings.HasPrefix(s, "http://127.0.0.1:") {
			p.Close()
			return nil, fmt.Errorf("the pace server process printed %q, expected its URL", s)
		}
		p.URL = s
	case <-time.After(30 * time.Second):
		p.Close()
		return nil, errors.New("the pace server process did not print its URL within 30 s")
	case <-ctx.Done():
		p.Close()
		return nil, ctx.Err()
	}
	return p, nil
}

// A flush is when the server handed a chunk to the kernel: after Before,
// before After.
type flush struct{ Before, After time.Time }

// takeFlushes returns the flushes the server recorded since the last
// call, by request id, and clears them.
func (p *paceProcess) takeFlushes(ctx context.Context) (map[string][]flush, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/flushes", nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.flc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the flush instants: %w", err)
	}
	defer resp.Body.Close()
	var raw map[string][][2]int64
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		return nil, fmt.Errorf("decoding the flush instants: %w", err)
	}
	out := make(map[string][]flush, len(raw))
	for id, ns := range raw {
		fs := make([]flush, len(ns))
		for i, n := range ns {
			fs[i] = flush{time.Unix(0, n[0]), time.Unix(0, n[1])}
		}
		out[id] = fs
	}
	return out, nil
}

// Close ends the server process (its stdin reaches its end) and waits for
// it.
func (p *paceProcess) Close() {
	p.flc.CloseIdleConnections()
	p.stdin.Close()
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}
