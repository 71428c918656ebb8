package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/timing"
)

// splitFlags are the flags that make a run one segment of a plan split
// across processes or hosts (docs/DISTRIBUTED.md).
type splitFlags struct {
	segment  string
	segments int
	startAt  string
	// seg and start are what they resolve to.
	seg   benchkit.Segment
	start time.Time
}

func addSplitFlags(fs *flag.FlagSet, s *splitFlags) {
	fs.StringVar(&s.segment, "segment", "", "send only segment i/N of the plan: request k when k mod N = i (needs --seed; docs/DISTRIBUTED.md)")
	fs.IntVar(&s.segments, "segments", 0, "split the plan in N segments, the index from $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job)")
	fs.StringVar(&s.startAt, "start-at", "", "start the schedule at this RFC 3339 wall time, shared by every segment (e.g. 2026-05-01T12:00:00Z)")
}

// resolve checks the split flags; severalRuns is a sweep or a rate search,
// which segments cannot share (each later run would start on its own).
func (s *splitFlags) resolve(seeded, severalRuns bool) error {
	seg, start, err := cli.ResolveSplit(s.segment, s.segments, s.startAt, seeded, nil)
	if err != nil {
		return &cli.UsageError{Err: err}
	}
	if (seg.Split() || !start.IsZero()) && severalRuns {
		return cli.Usagef("--segment and --start-at run one plan: they take one --rate (or --burst) and one thinking setting, no list and no --find-max-rate")
	}
	s.seg, s.start = seg, start
	return nil
}

// header is the run header's and the results' segment entry for the one
// rate of the run; nil when the run is neither split nor started at a
// shared instant.
func (s *splitFlags) header(t benchkit.Traffic, rates []float64) *benchkit.SegmentHeader {
	if !s.seg.Split() && s.start.IsZero() || len(rates) != 1 {
		return nil
	}
	t.Rate = rates[0]
	return s.seg.Header(s.start, t)
}

// runMerge is `serve-load merge`: it merges the rows files (or results
// JSON) of the segments of one plan into one result, every summary
// recomputed from the union of rows. A missing, duplicated or foreign
// segment is refused, naming it (exit 2); a client that was the
// bottleneck in any segment or overall exits 3 unless --allow-saturated.
func runMerge(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve-load merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: serve-load merge [flags] rows-0.jsonl rows-1.jsonl …")
		fs.PrintDefaults()
	}
	jsonOut := fs.String("json-out", "", "write the merged result as JSON to this file")
	format := fs.String("format", "table", "stdout format: table or json")
	allowSaturated := fs.Bool("allow-saturated", false, "exit 0 even when a segment's client was the bottleneck")
	var ms [5]float64
	for i, name := range []string{"ttft", "ttfa", "tpot", "itl", "e2e"} {
		fs.Float64Var(&ms[i], "slo-"+name, 0, "goodput objective on "+name+" in ms, as the segments ran with (0: none)")
	}
	if err := fs.Parse(args); err != nil {
		return &cli.UsageError{Err: err}
	}
	if fs.NArg() == 0 {
		return cli.Usagef("merge: name the segments' rows files")
	}
	if *format != "table" && *format != "json" {
		return cli.Usagef("--format must be table or json, got %q", *format)
	}
	var slo timing.SLO
	for i, d := range []*time.Duration{&slo.TTFT, &slo.TTFA, &slo.TPOT, &slo.ITL, &slo.E2E} {
		if math.IsNaN(ms[i]) || ms[i] < 0 || math.IsInf(ms[i], 0) {
			return cli.Usagef("SLO objectives must be non-negative milliseconds, got %g", ms[i])
		}
		*d = time.Duration(ms[i] * float64(time.Millisecond))
	}
	var files []benchkit.SegmentFile
	for _, path := range fs.Args() {
		f, err := os.Open(path)
		if err != nil {
			return cli.Usagef("merge: %v", err)
		}
		defer f.Close()
		files = append(files, benchkit.SegmentFile{Name: path, R: f})
	}
	m, err := benchkit.MergeSegments(files, slo)
	if err != nil {
		return &cli.UsageError{Err: err}
	}
	var errs []error
	if *format == "json" {
		errs = append(errs, benchkit.WriteJSON(stdout, m))
	} else {
		errs = append(errs, benchkit.WriteTable(stdout, []benchkit.Summary{m.Summary}, benchkit.TableOptions{Title: fmt.Sprintf("merged: %d segments of plan %.12s", m.Segments, m.PlanHash)}))
		for _, s := range m.PerSegment {
			gate := "ok"
			if s.Client.Saturated {
				gate = "SATURATED: " + s.Client.Reason
			}
			fmt.Fprintf(stdout, "segment %s  %s  host %q  %d/%d requests  client %s\n", s.Segment, s.File, s.Host, s.Summary.Requests, s.Summary.Scheduled, gate)
		}
	}
	if *jsonOut != "" {
		errs = append(errs, cli.WriteResults(*jsonOut, m))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if m.Summary.Failed > 0 {
		return fmt.Errorf("%w: %d requests", cli.ErrRequestsFailed, m.Summary.Failed)
	}
	if m.Saturated && !*allowSaturated {
		return fmt.Errorf("%w: in the union or a segment (see each segment's client); --allow-saturated keeps the figures", cli.ErrClientSaturated)
	}
	return nil
}
