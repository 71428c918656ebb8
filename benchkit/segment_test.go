package benchkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

func TestSegmentUnmarshalText(t *testing.T) {
	for in, want := range map[string]Segment{"": {}, "0/1": {}, "2/4": {2, 4}, " 3 / 8 ": {3, 8}} {
		got := Segment{Index: 9, Count: 10}
		if err := got.UnmarshalText([]byte(in)); err != nil || got != want {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"4/4", "-1/4", "1/0", "x/2", "3", "1/2/3"} {
		var got Segment
		if err := got.UnmarshalText([]byte(bad)); !errors.Is(err, ErrBadSegment) {
			t.Errorf("UnmarshalText(%q) = %v; want ErrBadSegment", bad, err)
		}
	}
}

func TestSegmentIndicesPartition(t *testing.T) {
	for _, n := range []int{1, 7, 64} {
		for _, count := range []int{1, 2, 3, 5} {
			seen := make([]int, n)
			caps := 0
			for i := range count {
				s := Segment{i, count}
				for _, k := range s.norm().Indices(n) {
					seen[k]++
					if k%count != i || !s.norm().Owns(k) {
						t.Errorf("segment %v sends request %d", s, k)
					}
				}
				caps += s.norm().Share(11)
			}
			for k, c := range seen {
				if c != 1 {
					t.Errorf("n=%d, %d segments: request %d sent %d times", n, count, k, c)
				}
			}
			if caps != 11 {
				t.Errorf("%d segments' caps of 11 add up to %d", count, caps)
			}
		}
	}
}

// segmentHarness runs loads against one embedded engine.
type segmentHarness struct {
	srv     *sim.Server
	counter promptsize.Counter
}

func newSegmentHarness(t *testing.T) *segmentHarness {
	t.Helper()
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	t.Cleanup(srv.Close)
	return &segmentHarness{srv: srv, counter: srv.Counter()}
}

// load returns a Load of segment seg with the shared nonce and start.
func (h *segmentHarness) load(t *testing.T, seg Segment, start time.Time, onRow func(Request)) *Load {
	t.Helper()
	c, err := openai.New(h.srv.VLLMURL, &openai.Options{Counter: h.counter})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return &Load{Engine: c, Model: h.srv.Model(), Builder: &promptsize.Builder{Counter: h.counter},
		Simulated: true, Nonce: "shared-nonce-7", Segment: seg, StartAt: start, Sinks: sinkOf(onRow)}
}

// TestSegmentsUnionIsTheSchedule runs one plan as one process and as four
// segments released at a shared start, against the embedded engine, for
// an open loop and a burst: the union of the segments' rows is the single
// schedule request for request (intended instants, lengths, prompt
// hashes, plan), and merging their JSONL gives the summary of the union
// of rows.
func TestSegmentsUnionIsTheSchedule(t *testing.T) {
	lengths := Lengths{Input: 96, Output: 6, RangeRatio: 0.5, Seed: 7}
	slo := timing.SLO{TTFT: time.Minute}
	for _, traffic := range []Traffic{
		{Rate: 400, Burstiness: 0.5, NumRequests: 22, MaxConcurrency: 8, Seed: 7},
		{Burst: 10, Seed: 7},
	} {
		t.Run(traffic.String(), func(t *testing.T) {
			h := newSegmentHarness(t)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			whole, err := h.load(t, Segment{}, time.Time{}, nil).Run(ctx, lengths, traffic, slo)
			if err != nil {
				t.Fatal(err)
			}
			if len(whole.Requests) != whole.Summary.Scheduled {
				t.Fatalf("single process: %d rows of %d scheduled", len(whole.Requests), whole.Summary.Scheduled)
			}

			const count = 4
			start := time.Now().Add(50 * time.Millisecond).Truncate(time.Millisecond)
			files := make([]bytes.Buffer, count)
			runs := make([]LoadRun, count)
			errs := make([]error, count)
			var wg sync.WaitGroup
			for i := range count {
				seg := Segment{i, count}
				var mu sync.Mutex
				hdr, _ := json.Marshal(runHeaderLine{RunHeader: &RunHeader{Program: "test", Host: fmt.Sprintf("host-%d", i)}})
				files[i].Write(append(hdr, '\n'))
				l := h.load(t, seg, start, func(r Request) {
					b, err := json.Marshal(r)
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					files[i].Write(append(b, '\n'))
					mu.Unlock()
				})
				wg.Go(func() { runs[i], errs[i] = l.Run(ctx, lengths, traffic, slo) })
			}
			testkit.WaitWithin(t, &wg, testkit.Patience)
			var union []Request
			for i := range count {
				if errs[i] != nil {
					t.Fatalf("segment %d: %v", i, errs[i])
				}
				if want := len(Segment{i, count}.Indices(len(whole.Requests))); runs[i].Summary.Scheduled != want {
					t.Errorf("segment %d scheduled %d; want its share %d", i, runs[i].Summary.Scheduled, want)
				}
				union = append(union, runs[i].Requests...)
			}

			// The schedule, request for request.
			type planned struct {
				Index              int
				Intended           float64
				PP, PPTokens, TG   int
				Prompt, Plan       string
				Segment            string
				IntendedAt, Starts string
			}
			byIndex := func(rows []Request, shared bool) map[int]planned {
				m := map[int]planned{}
				for _, r := range rows {
					if _, dup := m[r.Index]; dup {
						t.Errorf("request %d has two rows", r.Index)
					}
					p := planned{Index: r.Index, Intended: r.IntendedSendS, PP: r.PPTarget, PPTokens: r.PPTokens, TG: r.TGTarget, Prompt: r.PromptSHA256, Plan: r.PlanHash}
					if shared {
						seg := Segment{r.Index % count, count}
						if r.Segment != seg {
							t.Errorf("request %d sent by segment %v; want %v", r.Index, r.Segment, seg)
						}
						at, err := time.Parse(time.RFC3339Nano, r.IntendedAt)
						if err != nil || !at.Equal(start.Add(seconds(r.IntendedSendS))) {
							t.Errorf("request %d: intended_at %q, want start_at + %gs (%v)", r.Index, r.IntendedAt, r.IntendedSendS, err)
						}
					}
					m[r.Index] = p
				}
				return m
			}
			if diff := cmp.Diff(byIndex(whole.Requests, false), byIndex(union, true)); diff != "" {
				t.Errorf("the union of 4 segments is not the single schedule (-single +union):\n%s", diff)
			}
			if whole.Requests[0].PromptSHA256 == "" || whole.Requests[0].PlanHash == "" {
				t.Errorf("rows carry no prompt or plan hash: %+v", whole.Requests[0].PlanFields)
			}
			// On the shared timeline no request leaves before its
			// intended instant.
			for _, r := range union {
				if r.SendOffsetS < r.IntendedSendS || r.DoneS < r.SendOffsetS {
					t.Errorf("request %d: intended %g, sent %g, done %g on the shared timeline", r.Index, r.IntendedSendS, r.SendOffsetS, r.DoneS)
				}
			}

			// The merge of the four files is the union's summary.
			var in []SegmentFile
			for i := range files {
				in = append(in, SegmentFile{Name: fmt.Sprintf("seg-%d.jsonl", i), R: bytes.NewReader(files[i].Bytes())})
			}
			m, err := MergeSegments(in, slo)
			if err != nil {
				t.Fatal(err)
			}
			want := summarize(union, ByRun, slo)
			want.Scheduled, want.RequestRate, want.PeakInFlight = len(whole.Requests), union[0].Rate, peakInFlight(union)
			if diff := cmp.Diff(want, m.Summary, cmpopts.EquateNaNs(), cmpopts.IgnoreFields(Summary{}, "Labels", "Cell")); diff != "" {
				t.Errorf("merged summary differs from the union's (-union +merged):\n%s", diff)
			}
			if len(m.PerSegment) != count || m.PerSegment[2].Host != "host-2" || m.Segments != count || len(m.Requests) != len(whole.Requests) {
				t.Errorf("merge: %d segments (%d), host of 2 %q, %d requests", len(m.PerSegment), m.Segments, m.PerSegment[2].Host, len(m.Requests))
			}
			for i, s := range m.PerSegment {
				if s.Summary.Requests != len(runs[i].Requests) {
					t.Errorf("segment %d's own summary: %d requests; the run had %d", i, s.Summary.Requests, len(runs[i].Requests))
				}
				if diff := cmp.Diff(runs[i].Summary.TTFT, s.Summary.TTFT); diff != "" {
					t.Errorf("segment %d's own TTFT differs from its run's (-run +merge):\n%s", i, diff)
				}
			}
		})
	}
}

// TestSegmentRefusals checks what a segment refuses before sending.
func TestSegmentRefusals(t *testing.T) {
	h := newSegmentHarness(t)
	lengths := Lengths{Input: 64, Output: 2}
	for name, c := range map[string]struct {
		mod     func(*Load)
		traffic Traffic
		want    string
	}{
		"no nonce":           {func(l *Load) { l.Nonce = "" }, Traffic{Burst: 8}, "nonce"},
		"more segments":      {func(l *Load) { l.Segment = Segment{5, 6} }, Traffic{Burst: 4}, "no request"},
		"cap below segments": {nil, Traffic{Rate: 10, NumRequests: 8, MaxConcurrency: 3}, "cap of 3"},
		"bad segment":        {func(l *Load) { l.Segment = Segment{4, 4} }, Traffic{Burst: 4}, "segment 4/4"},
	} {
		l := h.load(t, Segment{1, 4}, time.Time{}, nil)
		if c.mod != nil {
			c.mod(l)
		}
		_, err := l.Run(t.Context(), lengths, c.traffic, timing.SLO{})
		if !errors.Is(err, ErrBadLoad) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want ErrBadLoad saying %q", name, err, c.want)
		}
	}
}

// TestPlanHash checks what the plan hash covers.
func TestPlanHash(t *testing.T) {
	l := &Load{Model: "m", Nonce: "n1"}
	lengths, traffic := Lengths{Input: 10, Output: 2, Seed: 1}, Traffic{Rate: 2, NumRequests: 4, Seed: 1}
	base := l.PlanHash(0, lengths, traffic)
	other := *l
	other.Segment, other.StartAt = Segment{1, 3}, time.Now()
	if other.PlanHash(0, lengths, traffic) != base {
		t.Error("the segment or the start changed the plan hash")
	}
	changed := map[string]string{}
	l2 := *l
	l2.Nonce = "n2"
	changed["nonce"] = l2.PlanHash(0, lengths, traffic)
	changed["run"] = l.PlanHash(1, lengths, traffic)
	changed["lengths seed"] = l.PlanHash(0, Lengths{Input: 10, Output: 2, Seed: 2}, traffic)
	changed["rate"] = l.PlanHash(0, lengths, Traffic{Rate: math.Inf(1), NumRequests: 4, Seed: 1})
	t2 := traffic
	t2.MaxConcurrency = 2
	changed["cap"] = l.PlanHash(0, lengths, t2)
	l3 := *l
	temp := 0.5
	l3.Request.Temperature = &temp
	changed["temperature"] = l3.PlanHash(0, lengths, traffic)
	for what, h := range changed {
		if h == base {
			t.Errorf("changing the %s left the plan hash unchanged", what)
		}
	}
}

// sinkOf adapts a function to the sinks of a Load; nil gives none.
func sinkOf(f func(Request)) []Sink {
	if f == nil {
		return nil
	}
	return []Sink{SinkFunc(func(r Request) error { f(r); return nil })}
}
