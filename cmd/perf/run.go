package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// sections are the parts of the run, in order, by the names -only takes.
var sections = []string{"skew", "sse", "itl", "prompt", "tokenizer", "energy"}

// config is what the flags set.
type config struct {
	quick     bool
	only      map[string]bool
	jsonPath  string
	modelsDir string // testdata/models
	nodeDir   string // scripts/node
	goTest    bool   // run the packages' in-memory benchmarks with go test

	skewNs     []int // burst sizes
	skewBursts int   // bursts per size and method
	sseStreams int   // concurrent loopback streams
	sseTokens  int   // tokens per stream
	itlConc    []int // concurrent streams in the accuracy check
	itlLoad    int   // concurrent streams of the serve-load (benchkit.Load) check
	itlChunks  int   // chunks per stream
	itlGap     time.Duration
	promptPPs  []int
	tokBytes   int // text size of the tokenizer comparison
	models     []string
}

// A Row is one figure of the table.
type Row struct {
	// Section is one of skew, sse, itl, prompt, tokenizer, energy.
	Section string `json:"section"`
	// Name says what was measured.
	Name string `json:"name"`
	// Value is the figure, in Unit.
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Ref is the floor or reference beside it (RefName says which), in
	// the same unit; nil when there is none.
	Ref     *float64 `json:"ref,omitempty"`
	RefName string   `json:"ref_name,omitempty"`
	// Ratio is Value / Ref, or the ratio the target is stated in.
	Ratio *float64 `json:"ratio,omitempty"`
	// Target is the target for this figure, Met whether it holds.
	Target string `json:"target,omitempty"`
	Met    *bool  `json:"met,omitempty"`
	// Note qualifies the figure.
	Note string `json:"note,omitempty"`
}

// Machine describes where the figures were measured.
type Machine struct {
	CPUs       int       `json:"cpus"`
	GOMAXPROCS int       `json:"gomaxprocs"`
	Model      string    `json:"cpu_model"`
	GoVersion  string    `json:"go_version"`
	OS         string    `json:"os"`
	LoadBefore string    `json:"loadavg_before"`
	LoadAfter  string    `json:"loadavg_after"`
	Started    time.Time `json:"started"`
	Seconds    float64   `json:"seconds"`
}

// Report is the JSON file -json writes.
type Report struct {
	Machine Machine `json:"machine"`
	Quick   bool    `json:"quick"`
	Rows    []Row   `json:"rows"`
	// Skipped lists what could not be measured, and why.
	Skipped []string `json:"skipped,omitempty"`
}

// report collects rows as the sections run.
type report struct {
	Report
	stderr io.Writer
}

func (r *report) add(row Row) { r.Rows = append(r.Rows, row) }

func (r *report) skip(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.Skipped = append(r.Skipped, msg)
	fmt.Fprintln(r.stderr, "perf: skipped:", msg)
}

func (r *report) progress(format string, args ...any) {
	fmt.Fprintf(r.stderr, "perf: "+format+"\n", args...)
}

func ptr[T any](v T) *T { return &v }

// target returns a Row's Target and Met for "value ≤ limit" (or ≥ when
// atLeast).
func target(text string, ok bool) (string, *bool) { return text, ptr(ok) }

// run parses args, runs the sections asked for and writes the table to
// stdout; progress and skips go to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("perf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		quick    = fs.Bool("quick", false, "tiny sizes: a smoke run in seconds, figures not meaningful")
		only     = fs.String("only", strings.Join(sections, ","), "comma-separated sections to run")
		jsonPath = fs.String("json", "", "also write the rows as JSON to this file")
		models   = fs.String("models", "testdata/models", "directory of the tokenizer test data (scripts/testdata.sh)")
		nodeDir  = fs.String("node", "scripts/node", "directory of the JavaScript reference (speed.mjs)")
		goTest   = fs.Bool("gotest", true, "run the adapters' in-memory stream benchmarks with go test (needs the go tool and the source tree)")
		cpuProf  = fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
		modelSet = fs.String("model", "qwen3,llama3_1,gptoss,gemma3,deepseek_v3", "comma-separated models for the prompt and tokenizer sections")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: perf takes flags only", fs.Args())
	}
	cfg := config{
		quick: *quick, only: map[string]bool{}, jsonPath: *jsonPath,
		modelsDir: *models, nodeDir: *nodeDir, goTest: *goTest,
		skewNs: []int{1, 8, 64, 256}, skewBursts: 100,
		sseStreams: 256, sseTokens: 2000,
		itlConc: []int{1, 64}, itlLoad: 16, itlChunks: 200, itlGap: 2 * time.Millisecond,
		promptPPs: []int{512, 4096, 32768, 131072},
		tokBytes:  1 << 20,
		models:    strings.Split(*modelSet, ","),
	}
	if cfg.quick {
		cfg.skewNs, cfg.skewBursts = []int{1, 8}, 3
		cfg.sseStreams, cfg.sseTokens = 4, 50
		cfg.itlConc, cfg.itlLoad, cfg.itlChunks, cfg.itlGap = []int{1, 2}, 2, 12, time.Millisecond
		cfg.promptPPs = []int{512}
		cfg.tokBytes = 16 << 10
		cfg.goTest = false
	}
	for _, s := range strings.Split(*only, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !slices.Contains(sections, s) {
			return fmt.Errorf("-only: unknown section %q, expected some of %s", s, strings.Join(sections, ","))
		}
		cfg.only[s] = true
	}

	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	rep := &report{stderr: stderr}
	rep.Quick = cfg.quick
	rep.Machine = machine()
	start := time.Now()
	steps := []struct {
		name string
		fn   func(context.Context, config, *report) error
	}{
		{"skew", runSkew}, {"sse", runSSE}, {"itl", runITL},
		{"prompt", runPrompt}, {"tokenizer", runTokenizer}, {"energy", runEnergy},
	}
	var errs []error
	for _, s := range steps {
		if !cfg.only[s.name] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rep.progress("%s …", s.name)
		if err := s.fn(ctx, cfg, rep); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
		}
	}
	rep.Machine.Seconds = time.Since(start).Seconds()
	rep.Machine.LoadAfter = loadavg()

	if err := writeTable(stdout, &rep.Report); err != nil {
		return err
	}
	if cfg.jsonPath != "" {
		b, err := json.MarshalIndent(rep.Report, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(cfg.jsonPath, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("writing -json: %w", err)
		}
	}
	return errors.Join(errs...)
}

// machine describes this machine as /proc and the runtime see it.
func machine() Machine {
	m := Machine{
		CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH,
		LoadBefore: loadavg(), Started: time.Now().UTC().Truncate(time.Second),
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// loadavg returns the first three fields of /proc/loadavg, or "unknown".
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// writeTable writes the machine line, the rows and the skips.
func writeTable(w io.Writer, r *Report) error {
	var b bytes.Buffer
	m := r.Machine
	fmt.Fprintf(&b, "machine: %s, %d CPUs (GOMAXPROCS %d), %s, %s; load average %s before, %s after; %.0f s\n",
		m.Model, m.CPUs, m.GOMAXPROCS, m.OS, m.GoVersion, m.LoadBefore, m.LoadAfter, m.Seconds)
	if r.Quick {
		fmt.Fprintln(&b, "quick run: tiny sizes, the figures are not meaningful")
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "section\tmeasure\tvalue\treference\tratio\ttarget\tmet\t")
	for _, row := range r.Rows {
		ref, ratio, met := "", "", ""
		if row.Ref != nil {
			ref = formatValue(*row.Ref, row.Unit) + " " + row.RefName
		}
		if row.Ratio != nil {
			ratio = fmt.Sprintf("%.3g×", *row.Ratio)
		}
		if row.Met != nil {
			met = map[bool]string{true: "yes", false: "NO"}[*row.Met]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", row.Section, row.Name, formatValue(row.Value, row.Unit), ref, ratio, row.Target, met)
	}
	tw.Flush()
	for _, row := range r.Rows {
		if row.Note != "" {
			fmt.Fprintf(&b, "note: %s %s: %s\n", row.Section, row.Name, row.Note)
		}
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(&b, "skipped: %s\n", s)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// formatValue prints v in unit, durations ("ns") scaled to a readable unit.
func formatValue(v float64, unit string) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case unit == "ns":
		return time.Duration(math.Round(v)).String()
	case unit == "%":
		return fmt.Sprintf("%.3f%%", v)
	case math.Abs(v) >= 1e6:
		return fmt.Sprintf("%.3gM %s", v/1e6, unit)
	case math.Abs(v) >= 1e4:
		return fmt.Sprintf("%.3gk %s", v/1e3, unit)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f %s", v, unit)
	default:
		return fmt.Sprintf("%.3g %s", v, unit)
	}
}
