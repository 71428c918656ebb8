package enginetest_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/enginetest"
	"github.com/inferbench/inferbench/timing"
)

// succeed answers every request at once with one streamed token; when
// waitLong is set, a request of more than 100 tokens first waits for its
// context to end and then succeeds anyway.
func succeed(waitLong bool) engine.Engine {
	return engine.Func(func(ctx context.Context, req engine.Request) (engine.Result, error) {
		if waitLong && req.MaxTokens > 100 {
			<-ctx.Done()
		}
		now := time.Now()
		res := engine.Result{Text: "x", Trace: timing.Trace{Start: now, Headers: now, End: now}}
		if req.Stream {
			res.Trace.Chunks = []timing.Chunk{{At: now, Tokens: 1}}
		}
		return res, nil
	})
}

// TestFaultWithoutErrorNamesTheHeader: an adapter that drops
// Request.Header sends the fault to nobody; the finding says so.
func TestFaultWithoutErrorNamesTheHeader(t *testing.T) {
	c := enginetest.Config{Engine: succeed(false), Model: model, Stream: true, CancelAfter: time.Millisecond,
		Faults: []enginetest.Fault{{Name: "cut", Header: http.Header{"X-Fake-Fault": {"cut"}}, Want: engine.KindTruncated}}}
	err := enginetest.Check(t.Context(), c)
	if s := fmt.Sprint(err); !strings.Contains(s, `fault "cut": the request succeeded`) || !strings.Contains(s, "does not send Request.Header") {
		t.Errorf("findings %v; want the fault finding to name Request.Header", err)
	}
}

// TestCancelHints: "raise CancelMaxTokens" only for a request that ended
// before its context did; one that outlived its context and still
// succeeded is named as not stopping on it.
func TestCancelHints(t *testing.T) {
	// The request that is too short returns at once; its context ends
	// only after a minute, so that on a loaded machine it still returns
	// first. The one that ignores its context waits for it to end.
	tests := []struct {
		name        string
		waitLong    bool
		cancelAfter time.Duration
		want        string
		not         string
	}{
		{"too short", false, time.Minute, "raise CancelMaxTokens", "does not stop on its context"},
		{"ignores ctx", true, time.Millisecond, "does not stop on its context", "raise CancelMaxTokens"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := enginetest.Config{Engine: succeed(tc.waitLong), Model: model, CancelAfter: tc.cancelAfter, CancelWithin: time.Minute}
			err := enginetest.Check(t.Context(), c)
			for _, check := range []string{"cancel", "deadline"} {
				var found string
				for _, line := range strings.Split(fmt.Sprint(err), "\n") {
					if strings.HasPrefix(line, "enginetest: "+check+": ") {
						found = line
					}
				}
				if !strings.Contains(found, tc.want) || strings.Contains(found, tc.not) {
					t.Errorf("%s finding %q; want %q and not %q", check, found, tc.want, tc.not)
				}
			}
		})
	}
}

// runHelperEnv marks the child process of TestRunReportsAtCaller.
const runHelperEnv = "ENGINETEST_RUN_HELPER"

// TestRunFailing is the failing test TestRunReportsAtCaller runs in a
// child process; on its own it skips.
func TestRunFailing(t *testing.T) {
	if os.Getenv(runHelperEnv) == "" {
		t.Skip("run by TestRunReportsAtCaller")
	}
	enginetest.Run(t, enginetest.Config{Engine: succeed(false), Model: model, CancelAfter: time.Millisecond}) // RUN-LINE
}

// TestRunReportsAtCaller: Run's findings point at the line of the test
// that called Run, not into the kit.
func TestRunReportsAtCaller(t *testing.T) {
	if os.Getenv(runHelperEnv) != "" {
		t.Skip("in the child")
	}
	src, err := os.ReadFile("hints_test.go")
	if err != nil {
		t.Fatal(err)
	}
	line := 0
	for i, l := range strings.Split(string(src), "\n") {
		if strings.HasSuffix(l, "// RUN-LINE") {
			line = i + 1
		}
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestRunFailing$", "-test.v")
	cmd.Env = append(os.Environ(), runHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the failing test passed:\n%s", out)
	}
	locs := regexp.MustCompile(`(?m)^\s+(\w+\.go:\d+): enginetest|^\s+(\w+\.go:\d+): `).FindAllStringSubmatch(string(out), -1)
	if len(locs) == 0 {
		t.Fatalf("no findings in the output:\n%s", out)
	}
	want := fmt.Sprintf("hints_test.go:%d", line)
	for _, m := range locs {
		if loc := m[1] + m[2]; loc != want {
			t.Errorf("a finding is reported at %s, want %s (the call of Run)", loc, want)
		}
	}
}
