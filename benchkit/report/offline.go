package report

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/inferbench/inferbench/benchkit"
)

// WriteOffline writes doc, the results of an offline batch (every request
// submitted at once, as examples/offline sends them), to w as one HTML
// page: the throughputs, which one burst gives without an interval, the
// requests' latencies with their intervals, how at once the burst went
// out, the server's view and the per-request timeline. doc holds one run,
// as offline writes it; a document of another number of runs is an
// error. It fails otherwise only when w does or a plot cannot be drawn.
func WriteOffline(w io.Writer, doc benchkit.LoadDocument, opts Options) error {
	v, err := buildOffline(doc, opts)
	if err != nil {
		return err
	}
	return v.write(w)
}

func buildOffline(doc benchkit.LoadDocument, opts Options) (view, error) {
	runs := doc.AllRuns()
	if len(runs) != 1 {
		return view{}, fmt.Errorf("report: an offline batch is one run; the document holds %d", len(runs))
	}
	r, m := runs[0], doc.Meta
	s := r.Summary
	p := view{Title: opts.Title, Simulated: m.Simulated, Predicted: m.Predicted, Kind: "Offline batch"}
	if p.Title == "" {
		p.Title = "Offline batch of " + orNone(m.Model) + " on " + orNone(m.Engine)
	}
	p.About, p.Command = about(m.RunInfo, m.Predicted)
	p.About = append(p.About,
		[2]string{"Batch", fmt.Sprintf("%d requests submitted at once (%s)", s.Scheduled, orNone(s.Traffic))},
		[2]string{"Workload", workloadOf(m.Workload)},
		[2]string{"Streamed", fmt.Sprint(m.Stream)})
	warns := slices.Clone(m.Warnings)
	if m.ClientSaturated {
		warns = append(warns, "client saturated: the client could not release the burst at once, so latencies include its own queueing: "+m.Saturation())
	}
	p.Warnings = warningsOf(warns)

	thr := [][2]string{
		{"Requests (measured / completed / failed)", fmt.Sprintf("%d / %d / %d", s.Requests, s.Completed, s.Failed)},
		{"Wall time, release to the last response (s)", num(s.DurationS, 3)},
		{"Output throughput (tokens/s)", ptr(s.OutputThroughput, 1, "none")},
		{"Total throughput (tokens/s)", ptr(s.TotalThroughput, 1, "none")},
		{"Request throughput (requests/s)", ptr(s.RequestThroughput, 2, "none")},
		{"Input / output tokens", fmt.Sprintf("%d / %d", s.TotalInputTokens, s.TotalOutputTokens)},
		{"Peak in flight (requests)", fmt.Sprint(s.PeakInFlight)},
	}
	keys := []string{"requests", "duration_s", "output_throughput", "total_throughput", "request_throughput", "tokens", "peak_in_flight"}
	p.Sections = append(p.Sections, section{ID: "throughput", Heading: "Throughput", Blocks: []block{
		{Table: pairsTable("Throughput of the batch", "Figure (unit)", "Value", thr, keys)},
		{Note: "Output throughput = Σ generated tokens / wall time, the wall time from the release of the burst to the end of the last response. " +
			"One burst gives one value of each: these throughputs have no interval; run the batch again for one."},
	}})

	lat := section{ID: "latency", Heading: "Latency of the requests"}
	var rows []latencyRow
	var absent []string
	for _, lr := range latencyRows(s, "") {
		if lr.N == 0 {
			absent = append(absent, lr.Name)
			continue
		}
		rows = append(rows, lr)
	}
	if len(rows) > 0 {
		lat.Blocks = append(lat.Blocks, block{Table: ptrTable(latencyTable("Latency of each request over the batch", rows))})
	}
	if len(absent) > 0 {
		why := "no request measured them"
		if !m.Stream {
			why = "the requests were not streamed, and only a stream shows when each token came"
		}
		lat.Blocks = append(lat.Blocks, block{Note: "Not measured: " + strings.Join(absent, ", ") + " (" + why + ")."})
	}
	release := []latencyRow{quantilesRow("Dispatch skew", "dispatch_skew", s.DispatchSkew), quantilesRow("Schedule lag", "schedule_lag", s.ScheduleLag)}
	lat.Blocks = append(lat.Blocks, block{Table: ptrTable(latencyTable("How at once the burst went out", release))},
		block{Note: "Schedule lag is when each request's bytes began to go out less the release; dispatch skew is each lag less the smallest. " +
			"A large skew means the client, not the server, spread the burst."})
	p.Sections = append(p.Sections, lat)

	more := section{ID: "requests", Heading: "The requests"}
	if len(s.Warnings) > 0 {
		more.Blocks = append(more.Blocks, block{Sub: "Warnings of the batch"}, block{Warnings: warningsOf(s.Warnings)})
	}
	if errs := errorCounts(r.Requests); len(errs) > 0 {
		t := &table{Caption: "Errors of the failed requests (most frequent first)", Head: []string{"Error", "Requests"}}
		for _, e := range errs {
			t.Rows = append(t.Rows, row{Head: e.Error, Cells: []cell{numCell(fmt.Sprint(e.Count), "")}})
		}
		more.Blocks = append(more.Blocks, block{Table: t})
	}
	if s.Server != nil {
		var b bytes.Buffer
		if err := s.WriteServerView(&b); err == nil {
			more.Blocks = append(more.Blocks, block{Sub: "The server's view"}, block{Pre: b.String()})
		}
	}
	budget := opts.MaxTimeline
	if budget == 0 {
		budget = DefaultMaxTimeline
	}
	if budget > 0 && len(r.Requests) > 0 {
		f, err := timelineFigure(r.Requests, budget)
		if err != nil {
			return view{}, err
		}
		if f != nil {
			f.Caption = "Per-request timeline: the burst was released at 0 s; each bar runs from its request's send to its end. " + f.Caption
			more.Blocks = append(more.Blocks, block{Figure: f})
		}
	}
	if len(more.Blocks) > 0 {
		p.Sections = append(p.Sections, more)
	}
	return p, nil
}

// quantilesRow is a latency table's row of any figure in seconds.
func quantilesRow(name, key string, q benchkit.Quantiles) latencyRow {
	return latencyRow{Name: name, Key: key, N: q.N,
		Mean: withCI(q.Mean, q.MeanCI), P50: withCI(q.P50, q.P50CI), P90: withCI(q.P90, q.P90CI), P99: withCI(q.P99, q.P99CI),
		Max: ms(q.Max)}
}

func ptrTable(t table) *table { return &t }

// workloadOf says what an offline batch sent: its random lengths' ranges,
// or that the rows came from a trace or a dataset.
func workloadOf(w benchkit.Workload) string {
	var l benchkit.Lengths
	switch v := w.(type) {
	case benchkit.Lengths:
		l = v
	case *benchkit.Lengths:
		if v == nil {
			return "none"
		}
		l = *v
	case nil:
		return "none"
	default:
		return "the rows of a trace or a dataset"
	}
	ilo, ihi := l.InputRange()
	olo, ohi := l.OutputRange()
	return fmt.Sprintf("input %d–%d and output %d–%d tokens, drawn uniformly (seed %d)", ilo, ihi, olo, ohi, l.Seed)
}
