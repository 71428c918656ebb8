package benchkit

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/exo"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
)

// recordLog is a slog handler that keeps every record, at every level, as
// text.
type recordLog struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *recordLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *recordLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *recordLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *recordLog) WithGroup(string) slog.Handler      { return l }

func (l *recordLog) text(r slog.Record) string {
	var b bytes.Buffer
	h := slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})
	_ = h.Handle(context.Background(), r)
	return b.String()
}

// TestLogsHoldNoBodiesOrKeys sends requests, healthy and failing, through
// both adapters with a logger that records every level, and through the
// sim with one too: no record holds the prompt or the API key, and none of
// the adapters' records is above debug level.
func TestLogsHoldNoBodiesOrKeys(t *testing.T) {
	const marker, key = "prompt-marker-7c1e", "sk-log-test-4b9d"
	t.Setenv("INFERBENCH_LOG_TEST_KEY", key)
	simLog, clientLog := &recordLog{}, &recordLog{}
	srv := sim.NewServer(sim.Options{Preset: sim.Fast(), Nodes: 1, Logger: slog.New(simLog)})
	defer srv.Close()
	oa, err := openai.New(srv.VLLMURL, &openai.Options{APIKeyEnv: "INFERBENCH_LOG_TEST_KEY", Logger: slog.New(clientLog), Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer oa.CloseIdleConnections()
	ex, err := exo.New(srv.URL, &exo.Options{Logger: slog.New(clientLog), RetryWaitMin: time.Millisecond, RetryWaitMax: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.CloseIdleConnections()
	ctx := context.Background()
	for _, e := range []engine.Engine{oa, ex} {
		for _, fault := range []string{"", "500", "malformed-chunk", "reset-mid-stream"} {
			for _, stream := range []bool{false, true} {
				req := engine.Request{Model: srv.Model(), Messages: []engine.Message{{Role: "user", Content: "say " + marker}},
					MaxTokens: 4, IgnoreEOS: true, Stream: stream}
				if fault != "" {
					req.Header = http.Header{sim.FaultHeader: {fault}}
				}
				_, _ = e.Complete(ctx, req)
			}
		}
	}
	_, _ = ex.Instances(ctx)
	_, _ = oa.Models(ctx)
	if len(clientLog.recs) == 0 {
		t.Fatal("the adapters logged nothing at debug level; the test checks nothing")
	}
	for name, l := range map[string]*recordLog{"adapter": clientLog, "sim": simLog} {
		for _, r := range l.recs {
			text := l.text(r)
			if strings.Contains(text, marker) || strings.Contains(text, key) {
				t.Errorf("%s record holds the prompt or the key: %s", name, text)
			}
			if name == "adapter" && r.Level > slog.LevelDebug {
				t.Errorf("adapter record above debug level: %s", text)
			}
		}
	}
}
