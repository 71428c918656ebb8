package benchkit

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// LoadMeta describes a load test.
type LoadMeta struct {
	// Tool is "inferbench".
	Tool string `json:"tool"`
	// Engine names the engine adapter ("openai", "exo"); BaseURL its
	// address.
	Engine  string `json:"engine"`
	BaseURL string `json:"base_url,omitempty"`
	// Simulated is true against the embedded engine: every figure is then
	// a model's, not a machine's. Preset names its hardware preset.
	Simulated bool   `json:"simulated"`
	Preset    string `json:"preset,omitempty"`
	// Model is the model measured; Tokenizer says how prompts were
	// counted.
	Model     string `json:"model"`
	Tokenizer string `json:"tokenizer,omitempty"`
	// Lengths and Traffic are the load as asked for; Rates the swept
	// rates ("inf" for infinite).
	Lengths Lengths  `json:"lengths"`
	Traffic Traffic  `json:"traffic"`
	Rates   []string `json:"rates,omitempty"`
	// Stream says whether responses were streamed; SLO the objectives.
	Stream bool   `json:"stream"`
	SLO    string `json:"slo,omitempty"`
	// Started and Finished are RFC 3339 wall-clock times.
	Started  string `json:"started,omitempty"`
	Finished string `json:"finished,omitempty"`
	// Interrupted is true when the run was stopped early.
	Interrupted bool     `json:"interrupted,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
	// Client is each run's client health (CheckClient); ClientSaturated
	// is true when any run's client was the bottleneck.
	Client          []ClientHealth `json:"client_health,omitempty"`
	ClientSaturated bool           `json:"client_saturated"`
	// Provenance says where the results came from: the program, the
	// machine, the command line, the run nonce and the server.
	Provenance *Provenance `json:"provenance,omitempty"`
	// Segment, when the run sent one segment of a split plan, says which,
	// from what shared start, and on what clocks (docs/DISTRIBUTED.md).
	Segment *SegmentHeader `json:"segment,omitempty"`
}

// A LoadDocument is the results file of a load test. A single run puts
// its summary and rows at the top ("summary", "requests"); a sweep or a
// rate search puts each run under "runs" (every row still carries its run
// and rate) and a search adds "max_rate".
type LoadDocument struct {
	Meta     LoadMeta     `json:"meta"`
	Summary  *LoadSummary `json:"summary,omitempty"`
	Requests []LoadRow    `json:"requests,omitempty"`
	Runs     []LoadRun    `json:"runs,omitempty"`
	MaxRate  *MaxRate     `json:"max_rate,omitempty"`
}

// NewLoadDocument lays runs out as LoadDocument describes: one run at the
// top level, several under Runs.
func NewLoadDocument(meta LoadMeta, runs []LoadRun, maxRate *MaxRate) LoadDocument {
	d := LoadDocument{Meta: meta, MaxRate: maxRate}
	if len(runs) == 1 && maxRate == nil {
		s := runs[0].Summary
		d.Summary, d.Requests = &s, runs[0].Requests
		if d.Requests == nil {
			d.Requests = []LoadRow{}
		}
		return d
	}
	d.Runs = runs
	return d
}

// WriteLoadJSON writes d as indented JSON.
func WriteLoadJSON(w io.Writer, d LoadDocument) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("benchkit: write load results: %w", err)
	}
	return nil
}

// WriteLoadTable writes one line per run for a terminal: offered load,
// requests, throughputs, TTFT, TPOT, ITL and E2E (mean, p50, p99 in ms)
// and goodput, then the runs' warnings as footnotes. The layout is for
// people and may change: parse the JSON instead.
func WriteLoadTable(w io.Writer, runs []LoadRun, opts TableOptions) error {
	return writeLoadGrid(w, runs, opts, false)
}

// WriteLoadMarkdown writes the table of WriteLoadTable in Markdown.
func WriteLoadMarkdown(w io.Writer, runs []LoadRun, opts TableOptions) error {
	return writeLoadGrid(w, runs, opts, true)
}

func writeLoadGrid(w io.Writer, runs []LoadRun, opts TableOptions, md bool) error {
	head := []string{"traffic", "ok/sent", "dur s", "req/s", "out tok/s", "ttft ms mean/p50/p99", "tpot ms mean/p50/p99", "itl ms p50/p99", "e2e ms p50/p99", "goodput", "skew ms p99", "lag ms p99"}
	var lines [][]string
	var notes []string
	for i, r := range runs {
		s := r.Summary
		good := "-"
		if s.Goodput != nil {
			good = fmt.Sprintf("%d/%d", s.Goodput.Good, s.Goodput.Total)
			if s.MeetsSLO != nil && *s.MeetsSLO {
				good += " ✓"
			} else {
				good += " ✗"
			}
		}
		lines = append(lines, []string{
			s.Traffic,
			fmt.Sprintf("%d/%d", s.Completed, s.Requests),
			fmt.Sprintf("%.2f", s.DurationS),
			num(s.RequestThroughput, 2),
			num(s.OutputThroughput, 1),
			ms(s.TTFT.Mean) + "/" + ms(s.TTFT.P50) + "/" + ms(s.TTFT.P99),
			ms(s.TPOT.Mean) + "/" + ms(s.TPOT.P50) + "/" + ms(s.TPOT.P99),
			ms(s.ITL.P50) + "/" + ms(s.ITL.P99),
			ms(s.E2E.P50) + "/" + ms(s.E2E.P99),
			good,
			ms(s.DispatchSkew.P99),
			ms(s.ScheduleLag.P99),
		})
		for _, wn := range s.Warnings {
			notes = append(notes, fmt.Sprintf("run %d (%s): %s", i, s.Traffic, wn))
		}
	}
	var b strings.Builder
	if opts.Title != "" {
		b.WriteString(opts.Title + "\n")
		if md {
			b.WriteString("\n")
		}
	}
	if opts.Simulated {
		b.WriteString("All figures are simulated (embedded engine), not measurements of real hardware.\n")
		if md {
			b.WriteString("\n")
		}
	}
	if md {
		b.WriteString("| " + strings.Join(head, " | ") + " |\n|" + strings.Repeat(" --- |", len(head)) + "\n")
		for _, l := range lines {
			b.WriteString("| " + strings.Join(l, " | ") + " |\n")
		}
	} else {
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, l := range lines {
			fmt.Fprintln(tw, strings.Join(l, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			if md {
				b.WriteString("- ")
			}
			b.WriteString(n + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
