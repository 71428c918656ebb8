package benchkit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/inferbench/inferbench/timing"
)

// maxLineBytes bounds one line of a rows file: a row with every per-token
// gap of a long reply stays far below it.
const maxLineBytes = 64 << 20

// SegmentHeader is what a segment adds to its rows file's run header
// (RunHeader.Segment) and its results (LoadMeta.Segment): which segment
// ran, on what timeline and clocks, so that a merge can say per segment
// where its rows come from. Segment.Header writes it on this host.
type SegmentHeader struct {
	// Segment is the share of the plan the run sent.
	Segment Segment `json:"segment"`
	// StartAt is the shared start, RFC 3339; "" without one.
	StartAt string `json:"start_at,omitempty"`
	// Traffic describes the whole plan's arrivals (Traffic.String).
	Traffic string `json:"traffic,omitempty"`
	// MaxConcurrency is the whole plan's cap on requests in flight (0:
	// none); with a cap the saturation gate is not applied.
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// Clock is the host's clocks (readClockInfo).
	Clock ClockInfo `json:"clock"`
}

// Header describes segment s of a plan with traffic, from the shared start
// startAt (zero: none), on this host's clocks.
func (s Segment) Header(startAt time.Time, traffic Traffic) *SegmentHeader {
	h := &SegmentHeader{Segment: s.norm(), Traffic: traffic.String(), MaxConcurrency: traffic.MaxConcurrency, Clock: readClockInfo()}
	if !startAt.IsZero() {
		h.StartAt = startAt.UTC().Format(time.RFC3339Nano)
	}
	return h
}

// A SegmentFile is one rows file to merge: the JSONL a segment wrote
// (serve-load's or offline's --jsonl), named for messages.
type SegmentFile struct {
	Name string
	R    io.Reader
}

// A MergedSegment is one segment of a merge: where its rows came from, its
// host and clocks as its run header gave them, and its own summary.
type MergedSegment struct {
	Segment Segment `json:"segment"`
	// File and Line are the rows file and the line its run began at (its
	// header, or its first row).
	File string `json:"file"`
	Line int    `json:"line"`
	// Host and Clock are from the run header; empty when it had none.
	Host  string     `json:"host,omitempty"`
	Clock *ClockInfo `json:"clock,omitempty"`
	// Summary is summarizeUnion of this segment's rows alone.
	Summary Summary `json:"summary"`
	// Client is the saturation gate (checkRun) of this segment's
	// rows: whether its host kept to its share of the schedule.
	Client ClientHealth `json:"client"`
}

// A MergedLoad is the one result of a plan run as segments: every figure
// recomputed from the union of the segments' rows.
type MergedLoad struct {
	// PlanHash is the plan every row named; Segments the number of
	// segments; StartAt the shared start ("" without one).
	PlanHash string `json:"plan_hash"`
	Segments int    `json:"segments"`
	StartAt  string `json:"start_at,omitempty"`
	// Summary is summarizeUnion of every row: percentiles over all rows
	// (never averages of the segments'), throughput and goodput over the
	// union's window, from the shared start to the last response.
	Summary Summary `json:"summary"`
	// Client is the saturation gate over every row, on the shared
	// timeline (a segment that started late lags in it); Saturated is
	// true when it or any segment's gate tripped.
	Client    ClientHealth `json:"client"`
	Saturated bool         `json:"client_saturated"`
	// PerSegment summarises each segment alone, by segment index.
	PerSegment []MergedSegment `json:"per_segment"`
	// Requests are the rows of every segment by plan index.
	Requests []Request `json:"requests"`
}

// summarizeUnion summarises rows of one plan, whichever segments sent
// them, as Summarize ByRun does, and fills what a run's runner would: the
// offered rate (from the rows), the peak of requests in flight (the most
// rows whose [send, done] intervals overlap on the rows' timeline) and
// the traffic left to the caller. Rows on a shared timeline (Load.StartAt)
// summarise exactly as the one process that sent them all would have.
func summarizeUnion(rows []Request, slo timing.SLO) Summary {
	s := summarize(rows, ByRun, slo)
	s.PeakInFlight = peakInFlight(rows)
	return s
}

// peakInFlight is the most rows whose [SendOffsetS, DoneS] intervals
// overlap; a request ending at the instant another starts does not
// overlap it.
func peakInFlight(rows []Request) int {
	type ev struct {
		t float64
		d int
	}
	evs := make([]ev, 0, 2*len(rows))
	for _, r := range rows {
		evs = append(evs, ev{r.SendOffsetS, +1}, ev{max(r.DoneS, r.SendOffsetS), -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			if a.t < b.t {
				return -1
			}
			return 1
		}
		return a.d - b.d // ends before starts at one instant
	})
	peak, cur := 0, 0
	for _, e := range evs {
		cur += e.d
		peak = max(peak, cur)
	}
	return peak
}

// segmentRun is the rows of one run in a rows file.
type segmentRun struct {
	file   string
	line   int // header line, or first row's
	header *segmentRunHeader
	rows   []Request
	lines  []int // each row's line
}

// segmentRunHeader is the part of a run header line a merge reads.
type segmentRunHeader struct {
	Host    string         `json:"host"`
	Segment *SegmentHeader `json:"segment"`
}

// readSegmentRuns reads a rows file: run headers (ParseRunHeader) and
// Requests, one per line, blank lines skipped. It returns each run's rows
// (a file a run appended to more than once holds several runs) and
// warnings. A last line cut short (a run killed mid-write) is dropped with
// a warning; any other line that is not a row of a plan (no plan_hash),
// or a row whose plan, segment or shared start differs from the rows
// before it in the same run, is an error wrapping ErrSegmentRows that
// names the file and line. A results document (--json-out, indented JSON
// whose first line is "{") is read as one run: its requests, and every
// run's under "runs".
func readSegmentRuns(name string, r io.Reader) (runs []segmentRun, warnings []string, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if head, _ := br.Peek(3); bytes.HasPrefix(head, []byte("{\n")) || bytes.HasPrefix(head, []byte("{\r\n")) {
		return readSegmentDocument(name, br)
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	var cur *segmentRun
	var bad error // a bad line, an error unless it was the last
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if bad != nil {
			return nil, nil, bad
		}
		if _, ok := ParseRunHeader(line); ok {
			var h struct {
				H segmentRunHeader `json:"run_header"`
			}
			_ = json.Unmarshal(line, &h) // ParseRunHeader decoded it
			runs = append(runs, segmentRun{file: name, line: lineNo, header: &h.H})
			cur = &runs[len(runs)-1]
			continue
		}
		var row Request
		if err := json.Unmarshal(line, &row); err != nil {
			bad = fmt.Errorf("%w: %s line %d is neither a run header nor a row: %v", ErrSegmentRows, name, lineNo, err)
			continue
		}
		if cur == nil {
			runs = append(runs, segmentRun{file: name, line: lineNo})
			cur = &runs[len(runs)-1]
		}
		if err := cur.add(row, fmt.Sprintf("%s line %d", name, lineNo), lineNo); err != nil {
			return nil, nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%w: read %s: %v", ErrSegmentRows, name, err)
	}
	if bad != nil {
		warnings = append(warnings, fmt.Sprintf("%s: the last line was cut short (a run killed mid-write?) and is left out", name))
	}
	return runs, warnings, nil
}

// readSegmentDocument reads a results document as one run.
func readSegmentDocument(name string, r io.Reader) ([]segmentRun, []string, error) {
	var doc LoadDocument
	dec := json.NewDecoder(io.LimitReader(r, 16*maxLineBytes))
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("%w: %s is not a results document: %v", ErrSegmentRows, name, err)
	}
	run := segmentRun{file: name, line: 1, header: &segmentRunHeader{Segment: doc.Meta.Segment}}
	if doc.Meta.Provenance != nil {
		run.header.Host = doc.Meta.Provenance.Host
	}
	rows := doc.Requests
	for _, lr := range doc.Runs {
		rows = append(rows, lr.Requests...)
	}
	for i, row := range rows {
		if err := run.add(row, fmt.Sprintf("%s request %d", name, i+1), i+1); err != nil {
			return nil, nil, err
		}
	}
	return []segmentRun{run}, nil, nil
}

// add checks row, found at where, and appends it to the run.
func (cur *segmentRun) add(row Request, where string, line int) error {
	switch {
	case row.PlanHash == "":
		return fmt.Errorf("%w: %s: a row without plan_hash (not a load row, or written before rows named their plan)", ErrSegmentRows, where)
	case row.Index < 0 || row.PlanRequests < 1 || row.Index >= row.PlanRequests:
		return fmt.Errorf("%w: %s: request %d of a plan of %d requests", ErrSegmentRows, where, row.Index, row.PlanRequests)
	case !row.Segment.Owns(row.Index):
		return fmt.Errorf("%w: %s: request %d is not segment %s's (request k goes in segment k mod %d)", ErrSegmentRows, where, row.Index, row.Segment, row.Segment.Count)
	}
	if len(cur.rows) > 0 {
		f := cur.rows[0]
		if row.PlanHash != f.PlanHash || row.Segment != f.Segment || row.StartAt != f.StartAt || row.PlanRequests != f.PlanRequests {
			return fmt.Errorf("%w: %s: a row of plan %s, segment %s, start %q follows rows of plan %s, segment %s, start %q in the same run (line %d)",
				ErrSegmentRows, where, short(row.PlanHash), row.Segment, row.StartAt, short(f.PlanHash), f.Segment, f.StartAt, cur.lines[0])
		}
	}
	cur.rows = append(cur.rows, row)
	cur.lines = append(cur.lines, line)
	return nil
}

// short abbreviates a plan hash for messages.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// bySegment checks that runs are the segments of one plan, each once, and
// returns them by segment index.
func bySegment(runs []segmentRun, files int) ([]*segmentRun, error) {
	first := runs[0].rows[0]
	where := func(r segmentRun) string {
		return fmt.Sprintf("%s line %d (segment %s)", r.file, r.line, r.rows[0].Segment)
	}
	count := max(first.Segment.Count, 1)
	for _, r := range runs[1:] {
		f := r.rows[0]
		switch {
		case f.PlanHash != first.PlanHash:
			return nil, fmt.Errorf("%w: %s is plan %s, %s is plan %s; merge only the segments of one invocation plan (same flags and --seed)",
				ErrPlanMismatch, where(runs[0]), short(first.PlanHash), where(r), short(f.PlanHash))
		case max(f.Segment.Count, 1) != count:
			return nil, fmt.Errorf("%w: %s splits the plan in %d, %s in %d", ErrPlanMismatch, where(runs[0]), count, where(r), max(f.Segment.Count, 1))
		case f.StartAt != first.StartAt:
			return nil, fmt.Errorf("%w: %s started at %q, %s at %q; every segment needs the same --start-at", ErrPlanMismatch, where(runs[0]), first.StartAt, where(r), f.StartAt)
		}
	}
	bySeg := make([]*segmentRun, count)
	for i := range runs {
		r := &runs[i]
		idx := r.rows[0].Segment.Index
		if prev := bySeg[idx]; prev != nil {
			return nil, fmt.Errorf("%w: segment %s appears twice: %s and %s; keep one of them (a retried pod appends a second run to its file)",
				ErrDuplicateSegment, r.rows[0].Segment, where(*prev), where(*r))
		}
		bySeg[idx] = r
	}
	var missing []string
	for i, r := range bySeg {
		if r == nil {
			missing = append(missing, Segment{Index: i, Count: count}.String())
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: segment %s of %d has no rows in the files given (%d files)", ErrMissingSegment, strings.Join(missing, ", "), count, files)
	}
	return bySeg, nil
}

// MergeSegments merges the rows files of the segments of one plan into
// one result: the rows of every segment, checked to belong to one plan
// (the same plan_hash, number of segments and shared start), each
// segment exactly once and each request at most once, and every summary
// recomputed from the union of rows by summarizeUnion (percentiles over
// all rows, never averaged across segments; throughput and goodput over
// the union's window against slo), beside each segment's own. Runs that
// wrote no row (a header alone) are skipped.
//
// It refuses, with an error wrapping ErrBadMerge that names the files and
// segments concerned: rows of different plans (ErrPlanMismatch), a segment
// with no rows (ErrMissingSegment), a segment in two runs or a request in
// two rows (ErrDuplicateSegment), and lines that are not rows
// (ErrSegmentRows). Warnings (requests of the plan without a row, no
// shared start, a cut last line) go in the summary's warnings.
func MergeSegments(files []SegmentFile, slo timing.SLO) (MergedLoad, error) {
	var runs []segmentRun
	var warnings []string
	for _, f := range files {
		rs, ws, err := readSegmentRuns(f.Name, f.R)
		if err != nil {
			return MergedLoad{}, err
		}
		warnings = append(warnings, ws...)
		for _, r := range rs {
			if len(r.rows) > 0 {
				runs = append(runs, r)
			}
		}
	}
	if len(runs) == 0 {
		return MergedLoad{}, fmt.Errorf("%w: no rows in %d files", ErrMissingSegment, len(files))
	}
	bySeg, err := bySegment(runs, len(files))
	if err != nil {
		return MergedLoad{}, err
	}
	first, count := runs[0].rows[0], len(bySeg)
	capped := false
	for _, r := range bySeg {
		if h := r.header; h != nil && h.Segment != nil && h.Segment.MaxConcurrency > 0 {
			capped = true
		}
	}
	n := first.PlanRequests
	seen := make([]int, n) // line+1 of the row of each request
	m := MergedLoad{PlanHash: first.PlanHash, Segments: count, StartAt: first.StartAt}
	for _, r := range bySeg {
		for j, row := range r.rows {
			if l := seen[row.Index]; l > 0 {
				return MergedLoad{}, fmt.Errorf("%w: request %d appears twice in %s, lines %d and %d", ErrDuplicateSegment, row.Index, r.file, l-1, r.lines[j])
			}
			seen[row.Index] = r.lines[j] + 1
		}
		ms := MergedSegment{Segment: r.rows[0].Segment, File: r.file, Line: r.line, Summary: summarizeUnion(r.rows, slo)}
		ms.Summary.Scheduled = len(r.rows[0].Segment.Indices(n))
		if h := r.header; h != nil {
			ms.Host = h.Host
			if h.Segment != nil {
				c := h.Segment.Clock
				ms.Clock = &c
				ms.Summary.Traffic = h.Segment.Traffic
			}
		}
		ms.Client = checkRun(LoadRun{Requests: r.rows}, capped)
		m.Saturated = m.Saturated || ms.Client.Saturated
		m.PerSegment = append(m.PerSegment, ms)
		m.Requests = append(m.Requests, r.rows...)
	}
	slices.SortFunc(m.Requests, func(a, b Request) int { return a.Index - b.Index })
	m.Summary = summarizeUnion(m.Requests, slo)
	m.Summary.Scheduled = n
	m.Summary.Traffic = m.PerSegment[0].Summary.Traffic
	m.Client = checkRun(LoadRun{Requests: m.Requests}, capped)
	m.Saturated = m.Saturated || m.Client.Saturated
	if len(m.Requests) < n {
		m.Summary.Interrupted = true
		warnings = append(warnings, fmt.Sprintf("%d of the plan's %d requests have no row: a segment was interrupted or its file is cut", n-len(m.Requests), n))
	}
	if m.StartAt == "" && count > 1 {
		warnings = append(warnings, "no shared start (--start-at): each segment's offsets are from its own start, so the union's window and throughput assume the segments started together")
	}
	m.Summary.Warnings = append(m.Summary.Warnings, warnings...)
	return m, nil
}
