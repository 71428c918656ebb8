package benchkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/inferbench/inferbench/timing"
)

// synthRows returns the rows segment seg would write for a plan of n
// requests whose request k has TTFT ttft(k), sent at k/10 s for 1 s.
func synthRows(plan string, seg Segment, n int, ttft func(k int) float64) []Request {
	var rows []Request
	for _, k := range seg.Indices(n) {
		v, e2e := ttft(k), 1.0
		rows = append(rows, Request{Index: k, PPTarget: 10, PPTokens: 10, TGTarget: 4, CompletionTokens: ip(4),
			IntendedSendS: float64(k) / 10, SendOffsetS: float64(k) / 10, DoneS: float64(k)/10 + 1,
			TTFTS: &v, E2ES: &e2e, Stream: true,
			PlanFields: PlanFields{PlanHash: plan, Segment: seg, PlanRequests: n, StartAt: "2026-05-01T12:00:00Z"}})
	}
	return rows
}

// jsonlOf writes a run header and rows as a rows file.
func jsonlOf(t testing.TB, host string, rows []Request) []byte {
	t.Helper()
	var b bytes.Buffer
	h, _ := json.Marshal(runHeaderLine{RunHeader: &RunHeader{Program: "serve-load", Host: host}})
	b.Write(append(h, '\n'))
	for _, r := range rows {
		j, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(j, '\n'))
	}
	return b.Bytes()
}

func segFiles(t testing.TB, plan string, count, n int, ttft func(int) float64) [][]byte {
	var out [][]byte
	for i := range count {
		out = append(out, jsonlOf(t, fmt.Sprintf("h%d", i), synthRows(plan, Segment{i, count}.norm(), n, ttft)))
	}
	return out
}

func files(bs ...[]byte) []SegmentFile {
	var fs []SegmentFile
	for i, b := range bs {
		fs = append(fs, SegmentFile{Name: fmt.Sprintf("rows-%d.jsonl", i), R: bytes.NewReader(b)})
	}
	return fs
}

// TestMergePercentilesOverUnion checks that the merge's percentiles are
// those of every row, not averages of the segments': segment 0 holds the
// fast requests and segment 1 the slow ones.
func TestMergePercentilesOverUnion(t *testing.T) {
	ttft := func(k int) float64 { return float64(k%2)*9 + 1 } // odd: slow
	fs := segFiles(t, "p", 2, 9, ttft)
	m, err := MergeSegments(files(fs...), timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	var all []float64
	for k := range 9 {
		all = append(all, ttft(k))
	}
	if got, want := *m.Summary.TTFT.P50, timing.Percentile(all, 50); got != want {
		t.Errorf("merged p50 TTFT %g; want %g over all rows", got, want)
	}
	avg := (*m.PerSegment[0].Summary.TTFT.P50 + *m.PerSegment[1].Summary.TTFT.P50) / 2
	if *m.Summary.TTFT.P50 == avg {
		t.Errorf("merged p50 %g is the average of the segments' p50s", avg)
	}
	if got := *m.Summary.TTFT.P50; got != 1 {
		t.Errorf("merged p50 TTFT %g; want 1 (5 of 9 requests took 1 s)", got)
	}
	// Every request runs 1 s from k/10 s: the window is 1.8 s, and all 9
	// overlap between 0.8 s and 1 s.
	if m.Summary.DurationS != 1.8 || m.Summary.PeakInFlight != 9 || m.Summary.Requests != 9 || m.Summary.Scheduled != 9 {
		t.Errorf("merged duration %g, peak %d, %d requests of %d", m.Summary.DurationS, m.Summary.PeakInFlight, m.Summary.Requests, m.Summary.Scheduled)
	}
	if m.PerSegment[1].Host != "h1" || m.PerSegment[1].Summary.Scheduled != 4 {
		t.Errorf("segment 1: host %q, scheduled %d", m.PerSegment[1].Host, m.PerSegment[1].Summary.Scheduled)
	}
}

// TestMergeRefusals checks that a missing, duplicated or foreign segment,
// a duplicated request and a bad line are refused, naming what is wrong.
func TestMergeRefusals(t *testing.T) {
	ttft := func(int) float64 { return 0.1 }
	four := segFiles(t, "planA", 4, 12, ttft)
	other := segFiles(t, "planB", 4, 12, ttft)
	twoWay := segFiles(t, "planA", 2, 12, ttft)
	dupRow := synthRows("planA", Segment{1, 4}, 12, ttft)
	dupRow = append(dupRow, dupRow[0])
	shifted := synthRows("planA", Segment{3, 4}, 12, ttft)
	for i := range shifted {
		shifted[i].StartAt = "2026-05-01T12:00:05Z"
	}
	stray := synthRows("planA", Segment{2, 4}, 12, ttft)
	stray[0].Index = 1
	for name, c := range map[string]struct {
		in   [][]byte
		is   error
		want []string
	}{
		"missing":           {[][]byte{four[0], four[1], four[3]}, ErrMissingSegment, []string{"segment 2/4"}},
		"two missing":       {[][]byte{four[0], four[3]}, ErrMissingSegment, []string{"1/4, 2/4"}},
		"duplicated":        {[][]byte{four[0], four[1], four[2], four[3], four[2]}, ErrDuplicateSegment, []string{"segment 2/4 appears twice", "rows-2.jsonl", "rows-4.jsonl"}},
		"appended twice":    {[][]byte{four[0], append(append([]byte{}, four[1]...), four[1]...), four[2], four[3]}, ErrDuplicateSegment, []string{"segment 1/4 appears twice", "rows-1.jsonl line 1", "rows-1.jsonl line 5"}},
		"other plan":        {[][]byte{four[0], four[1], other[2], four[3]}, ErrPlanMismatch, []string{"rows-2.jsonl", "planB"}},
		"other split":       {[][]byte{four[0], twoWay[1]}, ErrPlanMismatch, []string{"in 4", "in 2"}},
		"other start":       {[][]byte{four[0], four[1], four[2], jsonlOf(t, "h", shifted)}, ErrPlanMismatch, []string{"--start-at"}},
		"duplicated row":    {[][]byte{four[0], jsonlOf(t, "h", dupRow), four[2], four[3]}, ErrDuplicateSegment, []string{"request 1 appears twice"}},
		"request elsewhere": {[][]byte{jsonlOf(t, "h", stray)}, ErrSegmentRows, []string{"request 1 is not segment 2/4's"}},
		"bad middle line":   {[][]byte{append(append([]byte{}, four[0][:40]...), append([]byte("\n"), four[0]...)...)}, ErrSegmentRows, []string{"rows-0.jsonl line 1"}},
		"not rows":          {[][]byte{[]byte(`{"pp": 1}` + "\n")}, ErrSegmentRows, []string{"without plan_hash"}},
		"no rows":           {[][]byte{[]byte("\n")}, ErrMissingSegment, []string{"no rows"}},
	} {
		_, err := MergeSegments(files(c.in...), timing.SLO{})
		if !errors.Is(err, c.is) || !errors.Is(err, ErrBadMerge) {
			t.Errorf("%s: %v; want %v", name, err, c.is)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", name, err, w)
			}
		}
	}
}

// TestMergeCutLastLine checks that a last line cut short is left out with
// a warning, and that the requests without a row are counted.
func TestMergeCutLastLine(t *testing.T) {
	fs := segFiles(t, "p", 2, 6, func(int) float64 { return 0.2 })
	cut := fs[1][:len(fs[1])-30]
	m, err := MergeSegments(files(fs[0], cut), timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Summary.Requests != 5 || !m.Summary.Interrupted {
		t.Errorf("%d requests, interrupted %v; want 5 of 6 and interrupted", m.Summary.Requests, m.Summary.Interrupted)
	}
	joined := strings.Join(m.Summary.Warnings, "\n")
	for _, w := range []string{"rows-1.jsonl: the last line was cut", "1 of the plan's 6 requests have no row"} {
		if !strings.Contains(joined, w) {
			t.Errorf("warnings %q lack %q", joined, w)
		}
	}
}

// TestMergeWholePlan checks that the rows of one unsplit run merge as a
// plan of one segment, to the run's own summary.
func TestMergeWholePlan(t *testing.T) {
	rows := synthRows("p", Segment{}, 5, func(k int) float64 { return float64(k) })
	m, err := MergeSegments(files(jsonlOf(t, "h", rows)), timing.SLO{TTFT: 2500 * 1e6})
	if err != nil {
		t.Fatal(err)
	}
	want := summarizeUnion(rows, timing.SLO{TTFT: 2500 * 1e6})
	want.Scheduled = 5
	if diff := cmp.Diff(want, m.Summary, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("(-run +merge):\n%s", diff)
	}
	if m.Summary.Goodput == nil || m.Summary.Goodput.Good != 3 {
		t.Errorf("goodput %+v; want 3 of 5 within 2.5 s", m.Summary.Goodput)
	}
}

// FuzzReadSegmentRuns feeds the rows-file reader arbitrary bytes: it must
// never panic, and every row it returns must be one its segment owns,
// within its plan.
func FuzzReadSegmentRuns(f *testing.F) {
	for _, b := range segFiles(f, "p", 3, 7, func(int) float64 { return 0.1 }) {
		f.Add(b)
	}
	f.Add([]byte(`{"run_header":{"program":"x","segment":{"segment":"1/2"}}}` + "\n" + `{"plan_hash":"h","index":1,"plan_requests":2,"segment":"1/2"}`))
	f.Add([]byte(`{"plan_hash":"h","index":3,"plan_requests":2}`))
	f.Add([]byte(`{"plan_hash":"h","segment":"9/2"}` + "\n{"))
	f.Add([]byte("\n\n{\"run_header\":null}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		runs, _, err := readSegmentRuns("fuzz", bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrSegmentRows) {
				t.Fatalf("error %v does not wrap ErrSegmentRows", err)
			}
			return
		}
		for _, r := range runs {
			for _, row := range r.rows {
				if row.PlanHash == "" || row.Index < 0 || row.Index >= row.PlanRequests || !row.Segment.Owns(row.Index) {
					t.Fatalf("accepted row %+v", row.PlanFields)
				}
			}
		}
		_, _ = MergeSegments([]SegmentFile{{Name: "fuzz", R: bytes.NewReader(data)}}, timing.SLO{})
	})
}

// TestMergeDocuments checks that results documents (--json-out) merge
// like rows files, with the host from their provenance.
func TestMergeDocuments(t *testing.T) {
	var docs [][]byte
	for i := range 2 {
		seg := Segment{i, 2}
		rows := synthRows("p", seg, 5, func(int) float64 { return 0.3 })
		meta := LoadMeta{Tool: "inferbench", Provenance: &Provenance{Host: fmt.Sprintf("node-%d", i)}, Segment: seg.Header(time.Time{}, Traffic{Burst: 5})}
		var b bytes.Buffer
		if err := WriteJSON(&b, NewLoadDocument(meta, []LoadRun{{Summary: summarize(rows, ByRun, timing.SLO{}), Requests: rows}}, nil)); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b.Bytes())
	}
	m, err := MergeSegments(files(docs...), timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Summary.Requests != 5 || m.PerSegment[1].Host != "node-1" || m.Summary.Traffic != "burst(n=5)" || m.PerSegment[0].Clock == nil || m.PerSegment[0].Clock.Monotonic == "" {
		t.Errorf("merged %d requests, host %q, traffic %q, clock %+v", m.Summary.Requests, m.PerSegment[1].Host, m.Summary.Traffic, m.PerSegment[0].Clock)
	}
	if _, err := MergeSegments(files(docs[0]), timing.SLO{}); !errors.Is(err, ErrMissingSegment) || !strings.Contains(err.Error(), "segment 1/2") {
		t.Errorf("one document of two: %v; want segment 1/2 missing", err)
	}
}

// TestMergeSaturationPerSegment checks the saturation gate per segment
// and over the union: a segment whose requests all left a second late
// trips both.
func TestMergeSaturationPerSegment(t *testing.T) {
	ttft := func(int) float64 { return 0.1 }
	late := synthRows("p", Segment{1, 2}, 40, ttft)
	for i := range late {
		late[i].SendOffsetS += 1
		late[i].DoneS += 1
	}
	m, err := MergeSegments(files(jsonlOf(t, "a", synthRows("p", Segment{0, 2}, 40, ttft)), jsonlOf(t, "b", late)), timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	if m.PerSegment[0].Client.Saturated || !m.PerSegment[1].Client.Saturated || !m.Client.Saturated || !m.Saturated {
		t.Errorf("gates: segment 0 %v, segment 1 %v, union %v (%s), merge %v; want false, true, true, true",
			m.PerSegment[0].Client.Saturated, m.PerSegment[1].Client.Saturated, m.Client.Saturated, m.Client.Reason, m.Saturated)
	}
}
