package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/timing"
)

// MaxFileBytes bounds the results file Load reads.
const MaxFileBytes = 1 << 30

// The kinds of results file Load reads.
const (
	KindLoad      = "load"       // serve-load's or offline's LoadDocument
	KindExo       = "exo"        // exo-bench's Document
	KindSessions  = "sessions"   // multi-turn's SessionsDocument
	KindBenchQwen = "bench-qwen" // bench-qwen's document: one load run per scale
	KindMerged    = "merged"     // serve-load merge's MergedLoad
	KindJSONL     = "jsonl"      // rows, one per line (serve-load's and multi-turn's --jsonl)
	KindExoJSONL  = "exo-jsonl"  // exo-bench's rows, one per line
)

// The kinds of unit a Group holds.
const (
	UnitRun    = "run"    // several runs at the same settings: each run
	UnitBatch  = "batch"  // one run: consecutive batches of its requests (batch means)
	UnitRepeat = "repeat" // exo-bench: each repeat (burst) of a cell
)

// Options says how Load splits a side into units. The zero Options uses
// the defaults.
type Options struct {
	// Batches is the number of batches one run is split into (0 means
	// DefaultBatches); MinBatch the fewest requests a batch may hold (0
	// means DefaultMinBatch): a run of n requests gets min(Batches,
	// n/MinBatch) batches, and none below two.
	Batches, MinBatch int
}

// The defaults of Options.
const (
	DefaultBatches  = 10
	DefaultMinBatch = 10
)

// A Side is one results file read for comparison: what it measured and
// its independent units, grouped by the settings within the file that
// were measured apart (a sweep's rates, exo-bench's cells, a multi-turn
// program's prefix cache modes, bench-qwen's scales).
type Side struct {
	// Path is the file; Kind what it holds (KindLoad, …).
	Path string
	Kind string
	// Info is the file's description of its run; nil where it has none
	// (rows without a header). Predicted says the file's runs were
	// computed on the embedded engine's virtual clock, never sent (its
	// meta or any of its rows says so).
	Info      *benchkit.RunInfo
	Predicted bool
	// Summaries are each load run's summary as the file holds it (a load
	// document's runs in order, a merged load's union), for a report to
	// show the runs' own figures side by side; nil for other kinds.
	Summaries []benchkit.Summary
	// Settings are what the file says was measured, by name (the names
	// Compare's refusals and --allow use), each as canonical JSON.
	Settings map[string]string
	// Means are settings known only from the rows, as means (prompt and
	// output tokens asked for), compared within a tolerance.
	Means map[string]float64
	// Groups are the groups of units, in the file's order.
	Groups []Group
	// Warnings say what limits the comparison (an interrupted run, rows
	// that did not decode).
	Warnings []string
}

// A Group is one setting within a file (a rate, a cell) and its units.
type Group struct {
	// Name identifies the group across files: a load run's rate and
	// thinking setting as its rows label them ("rate=20", "rate=inf
	// thinking=on"), exo-bench's cell name, "scale=0.4",
	// "prefix_cache=radix".
	Name string
	// UnitKind is UnitRun, UnitBatch or UnitRepeat; Units the samples.
	UnitKind string
	Units    []Unit
	// Requests counts the rows the units were computed from.
	Requests int
	// Lag1 is, for batches, each figure's lag-1 autocorrelation over
	// the batches in send order.
	Lag1 map[string]float64
}

// Load reads a results file of any program (its JSON document or its
// JSONL rows; the kind is detected) and splits it into units.
func Load(path string, o Options) (*Side, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("compare: read %s: %w", path, err)
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("compare: %s is larger than %d bytes", path, MaxFileBytes)
	}
	s, err := Read(b, o)
	if err != nil {
		return nil, fmt.Errorf("compare: %s: %w", path, err)
	}
	s.Path = path
	return s, nil
}

// A run is one run's rows before they are split into units.
type run struct {
	group string
	rows  []benchkit.Request
}

// Read is Load of a file's contents.
func Read(b []byte, o Options) (*Side, error) {
	if o.Batches <= 0 {
		o.Batches = DefaultBatches
	}
	if o.MinBatch <= 0 {
		o.MinBatch = DefaultMinBatch
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return nil, errors.New("not a results file: neither a JSON document nor JSONL rows")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err == nil && isDocument(top) {
		return readDocument(b, top, o)
	}
	return readJSONL(b, o)
}

// isDocument tells a results document from a single JSONL row.
func isDocument(top map[string]json.RawMessage) bool {
	for _, k := range []string{"meta", "runs", "plan_hash", "program"} {
		if _, ok := top[k]; ok {
			return true
		}
	}
	return false
}

func readDocument(b []byte, top map[string]json.RawMessage, o Options) (*Side, error) {
	var meta map[string]json.RawMessage
	if m, ok := top["meta"]; ok && string(m) != "null" {
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, fmt.Errorf("its meta: %w", err)
		}
	}
	s := &Side{Settings: map[string]string{}, Means: map[string]float64{}}
	var predicted bool
	if json.Unmarshal(meta["predicted"], &predicted) == nil {
		s.Predicted = predicted
	}
	var slo timing.SLO
	var runs []run
	switch {
	case has(top, "plan_hash"):
		s.Kind = KindMerged
		var m benchkit.MergedLoad
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("a merged load: %w", err)
		}
		slo = sloOf(m.Summary.Goodput)
		s.Summaries = []benchkit.Summary{m.Summary}
		runs = append(runs, run{group: rateGroup(m.Requests), rows: m.Requests})
	case isBenchQwen(top):
		s.Kind = KindBenchQwen
		var err error
		if runs, slo, err = readBenchQwen(b, s); err != nil {
			return nil, err
		}
	case has(meta, "sessions"):
		s.Kind = KindSessions
		var d benchkit.SessionsDocument
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("a sessions document: %w", err)
		}
		s.Info = &d.Meta.RunInfo
		s.Settings["sessions"] = canonWithout(meta["sessions"], "seed", "sessions")
		for i, r := range d.Runs {
			name := "prefix_cache=" + r.PrefixCache
			if r.PrefixCache == "" {
				name = "run " + strconv.Itoa(i)
			}
			runs = append(runs, run{group: name, rows: r.Requests})
		}
	case has(meta, "plan") || (meta == nil && has(top, "runs")):
		s.Kind = KindExo
		var d benchkit.Document
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("exo-bench's document: %w", err)
		}
		if d.Meta != nil {
			s.Info = &d.Meta.RunInfo
			s.Settings["plan"] = canonWithout(meta["plan"], "repeat", "warmup", "pause_between_repeats_ns", "pause_between_groups_ns")
		}
		infoSettings(s.Settings, meta)
		s.saturated(meta)
		rowSettings(s, d.Runs)
		s.Groups = exoGroups(d.Runs, nil)
		s.note(d.Runs)
		return s, nil
	default:
		s.Kind = KindLoad
		var d benchkit.LoadDocument
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("a load document: %w", err)
		}
		s.Info = &d.Meta.RunInfo
		slo, _ = parseSLO(d.Meta.SLO)
		loadSettings(s.Settings, meta)
		for _, lr := range d.AllRuns() {
			runs = append(runs, run{group: rateGroup(lr.Requests), rows: lr.Requests})
			s.Summaries = append(s.Summaries, lr.Summary)
		}
	}
	if s.Kind != KindBenchQwen {
		infoSettings(s.Settings, meta)
	}
	s.saturated(meta)
	var all []benchkit.Request
	for _, r := range runs {
		all = append(all, r.rows...)
	}
	rowSettings(s, all)
	s.Groups = loadGroups(runs, slo, o)
	s.note(all)
	return s, nil
}

// readBenchQwen reads bench-qwen's document: a load document per scale,
// each scale a group; its settings go into s.
func readBenchQwen(b []byte, s *Side) (runs []run, slo timing.SLO, err error) {
	var d struct {
		Trace  string    `json:"trace"`
		Rows   int       `json:"rows"`
		Scales []float64 `json:"scales"`
		Runs   []struct {
			Scale float64               `json:"scale"`
			Load  benchkit.LoadDocument `json:"load"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, slo, fmt.Errorf("bench-qwen's document: %w", err)
	}
	s.Settings["trace"] = canon(map[string]any{"trace": filepath.Base(d.Trace), "rows": d.Rows})
	s.Settings["scales"] = canon(d.Scales)
	for i, r := range d.Runs {
		if i == 0 {
			info := r.Load.Meta.RunInfo
			s.Info = &info
			slo, _ = parseSLO(r.Load.Meta.SLO)
		}
		for _, lr := range r.Load.AllRuns() {
			runs = append(runs, run{group: "scale=" + strconv.FormatFloat(r.Scale, 'g', -1, 64), rows: lr.Requests})
		}
	}
	if len(d.Runs) > 0 {
		var raw struct {
			Runs []struct {
				Load struct {
					Meta map[string]json.RawMessage `json:"meta"`
				} `json:"load"`
			} `json:"runs"`
		}
		if json.Unmarshal(b, &raw) == nil && len(raw.Runs) > 0 {
			loadSettings(s.Settings, raw.Runs[0].Load.Meta)
			infoSettings(s.Settings, raw.Runs[0].Load.Meta)
		}
	}
	return runs, slo, nil
}

func has(m map[string]json.RawMessage, k string) bool {
	v, ok := m[k]
	return ok && string(v) != "null"
}

// isBenchQwen: bench-qwen's document names itself, or its runs hold a
// scale and a load document.
func isBenchQwen(top map[string]json.RawMessage) bool {
	var p string
	if json.Unmarshal(top["program"], &p) == nil && p == "bench-qwen" {
		return true
	}
	var runs []map[string]json.RawMessage
	return json.Unmarshal(top["runs"], &runs) == nil && len(runs) > 0 && has(runs[0], "scale") && has(runs[0], "load")
}

// rateGroup names a load run's group by its rows' rate and thinking
// setting, as the rows label them ("rate=20", "rate=inf thinking=on"),
// so that a document and its JSONL rows name their groups alike; the
// traffic's shape is compared apart (the meta's traffic).
func rateGroup(rows []benchkit.Request) string {
	if len(rows) == 0 {
		return "rate=inf"
	}
	return rowGroup(rows[0])
}

func rowGroup(r benchkit.Request) string {
	name := "rate=inf"
	if r.Rate != nil {
		name = "rate=" + strconv.FormatFloat(*r.Rate, 'g', -1, 64)
	}
	if r.Thinking != "" {
		name += " thinking=" + r.Thinking
	}
	return name
}

// readJSONL reads rows, one per line: a run begins at each run header
// and, within it, at each run label; exo's rows are grouped by cell.
func readJSONL(b []byte, o Options) (*Side, error) {
	s := &Side{Kind: KindJSONL, Settings: map[string]string{}, Means: map[string]float64{}}
	jr := benchkit.NewJSONLReader(bytes.NewReader(b))
	var rows []benchkit.Request
	var header []int // the header index of each row
	var last *benchkit.RunHeader
	headers, bad, probes, exo := 0, 0, 0, false
	for jr.Scan() {
		if h := jr.Header(); h != last {
			last = h
			headers++
			if h.Provenance != nil {
				provSettings(s.Settings, h.Provenance)
			}
		}
		if jr.LineErr() != nil {
			bad++
			continue
		}
		r := jr.Request()
		if r.Probe {
			probes++ // a head-of-line probe is no request of the load
			continue
		}
		rows = append(rows, r)
		header = append(header, headers)
	}
	if err := jr.Err(); err != nil {
		return nil, err
	}
	// Every row has its end (done_s) or, exo's, its elapsed time.
	if len(rows) == 0 || !bytes.Contains(b, []byte(`"done_s"`)) && !bytes.Contains(b, []byte(`"elapsed_s"`)) {
		return nil, errors.New("no line is a request's row: not a results file")
	}
	if bad > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d lines did not decode and were left out", bad))
	}
	if probes > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d head-of-line probe rows were left out (they are compared in no figure)", probes))
	}
	// exo's rows carry elapsed_s, which the load rows do not.
	exo = bytes.Contains(b, []byte(`"elapsed_s"`)) && rows[0].Concurrency > 0
	rowSettings(s, rows)
	if exo {
		s.Kind = KindExoJSONL
		s.Groups = exoGroups(rows, header)
		s.note(rows)
		return s, nil
	}
	type key struct{ header, run int }
	var order []key
	byKey := map[key]*run{}
	for i, r := range rows {
		k := key{header[i], r.Run}
		if byKey[k] == nil {
			byKey[k] = &run{group: rowGroup(r)}
			order = append(order, k)
		}
		byKey[k].rows = append(byKey[k].rows, r)
	}
	runs := make([]run, 0, len(order))
	for _, k := range order {
		runs = append(runs, *byKey[k])
	}
	s.Groups = loadGroups(runs, timing.SLO{}, o)
	s.note(rows)
	return s, nil
}

// loadGroups groups runs by name: a group of several runs has the runs
// as its units, a group of one run that run's batches.
func loadGroups(runs []run, slo timing.SLO, o Options) []Group {
	var out []Group
	idx := map[string]int{}
	var members [][]run
	for _, r := range runs {
		i, ok := idx[r.group]
		if !ok {
			i = len(out)
			idx[r.group] = i
			out = append(out, Group{Name: r.group})
			members = append(members, nil)
		}
		members[i] = append(members[i], r)
		out[i].Requests += len(r.rows)
	}
	for i, m := range members {
		g := &out[i]
		if len(m) >= 2 {
			g.UnitKind = UnitRun
			for _, r := range m {
				g.Units = append(g.Units, runUnit(r.rows, slo))
			}
			continue
		}
		g.UnitKind = UnitBatch
		k := min(o.Batches, len(m[0].rows)/o.MinBatch)
		if k < 2 {
			continue
		}
		g.Units = batches(m[0].rows, k, slo)
		g.Lag1 = map[string]float64{}
		for _, f := range figures {
			if x, ok := column(g.Units, f.Name); ok {
				g.Lag1[f.Name] = lag1(x)
			}
		}
	}
	return out
}

// exoGroups groups exo's rows by cell (placement, thinking, pp, tg,
// concurrency), each repeat of a cell (and of each run header, for
// rows appended by several runs) one unit.
func exoGroups(rows []benchkit.Request, header []int) []Group {
	var out []Group
	idx := map[string]int{}
	type rk struct {
		group, header, repeat int
	}
	var order []rk
	units := map[rk][]benchkit.Request{}
	for i, r := range rows {
		name := benchkit.Summarize([]benchkit.Request{r}, benchkit.ByCell, timing.SLO{})[0].Name()
		g, ok := idx[name]
		if !ok {
			g = len(out)
			idx[name] = g
			out = append(out, Group{Name: name, UnitKind: UnitRepeat})
		}
		h := 0
		if header != nil {
			h = header[i]
		}
		k := rk{g, h, r.Repeat}
		if _, ok := units[k]; !ok {
			order = append(order, k)
		}
		units[k] = append(units[k], r)
		out[g].Requests++
	}
	for _, k := range order {
		out[k.group].Units = append(out[k.group].Units, repeatUnit(units[k]))
	}
	return out
}

// column is the figure's value over the units that have it; ok is false
// when one lacks it.
func column(units []Unit, name string) ([]float64, bool) {
	x := make([]float64, 0, len(units))
	for _, u := range units {
		v, ok := u[name]
		if !ok {
			return nil, false
		}
		x = append(x, v)
	}
	return x, len(x) > 0
}

// note adds the side's warnings about its rows.
func (s *Side) note(rows []benchkit.Request) {
	if s.Info != nil && s.Info.Interrupted {
		s.Warnings = append(s.Warnings, "the run was interrupted: its last units are short")
	}
	failed := 0
	for _, r := range rows {
		if r.Failed() {
			failed++
		}
	}
	if failed > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d of %d requests failed: the latency figures are over the completed ones", failed, len(rows)))
	}
}

// saturated warns when the file says its client was the bottleneck.
func (s *Side) saturated(meta map[string]json.RawMessage) {
	var sat bool
	if json.Unmarshal(meta["client_saturated"], &sat) == nil && sat {
		s.Warnings = append(s.Warnings, "the client was the bottleneck (client_saturated): its latencies include its own queueing")
	}
}

// infoSettings records the run's target from a document's meta.
func infoSettings(set map[string]string, meta map[string]json.RawMessage) {
	for _, k := range []string{"model", "engine", "simulated", "preset", "prefix_cache"} {
		if v, ok := meta[k]; ok {
			set[k] = canonRaw(v)
		}
	}
	if p, ok := meta["provenance"]; ok {
		var prov benchkit.Provenance
		if json.Unmarshal(p, &prov) == nil {
			provSettings(set, &prov)
		}
	}
}

// provSettings records what the provenance says the prompts and the
// server were: the shared prefix, the tokenizer and chat template hashes,
// and the server's own description of itself.
func provSettings(set map[string]string, p *benchkit.Provenance) {
	set["shared_prefix_tokens"] = strconv.Itoa(p.SharedPrefix)
	if p.TokenizerSHA256 != "" {
		set["tokenizer"] = p.TokenizerSHA256
	}
	if p.ChatTemplateSHA256 != "" {
		set["chat_template"] = p.ChatTemplateSHA256
	}
	if p.Server != nil {
		set["server"] = canon(p.Server)
	}
}

// loadSettings records a load test's workload and traffic as asked for,
// less what draws them (the seed) and how long they ran (the number of
// requests and the duration, which change how precise a figure is, not
// what it is).
func loadSettings(set map[string]string, meta map[string]json.RawMessage) {
	if v, ok := meta["lengths"]; ok {
		set["lengths"] = canonWithout(v, "seed")
	}
	if v, ok := meta["traffic"]; ok {
		set["traffic"] = canonWithout(v, "seed", "num_requests", "duration_ns")
	}
	for _, k := range []string{"rates", "thinking", "stream", "slo"} {
		if v, ok := meta[k]; ok {
			set[k] = canonRaw(v)
		}
	}
}

// rowSettings records what the rows themselves say: the models they
// named, whether they streamed, their thinking settings, and the mean
// prompt and output lengths asked for.
func rowSettings(s *Side, rows []benchkit.Request) {
	models, stream, thinking := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var pp, tg float64
	n := 0
	for _, r := range rows {
		s.Predicted = s.Predicted || r.Predicted
		if r.Model != "" {
			models[r.Model] = true
		}
		stream[strconv.FormatBool(r.Stream)] = true
		thinking[r.Thinking] = true
		pp += float64(r.PPTarget)
		tg += float64(r.TGTarget)
		n++
	}
	if len(models) > 0 {
		s.Settings["row_models"] = canon(sortedKeys(models))
	}
	s.Settings["row_stream"] = canon(sortedKeys(stream))
	s.Settings["row_thinking"] = canon(sortedKeys(thinking))
	if n > 0 {
		s.Means["prompt_tokens"] = pp / float64(n)
		s.Means["output_tokens"] = tg / float64(n)
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func canon(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// canonRaw is raw JSON re-encoded with sorted keys and no spacing.
func canonRaw(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	return canon(v)
}

// canonWithout is canonRaw of an object less the keys named.
func canonWithout(raw json.RawMessage, drop ...string) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return canonRaw(raw)
	}
	for _, k := range drop {
		delete(m, k)
	}
	return canon(m)
}

// sloOf reads a summary's objectives back.
func sloOf(g *benchkit.Goodput) timing.SLO {
	if g == nil {
		return timing.SLO{}
	}
	s, _ := parseSLO(g.SLO)
	return s
}

// parseSLO reads objectives as timing.SLO.String writes them,
// "ttft≤200ms tpot≤50ms"; "" and "none" are none.
func parseSLO(v string) (timing.SLO, error) {
	var s timing.SLO
	if v == "" || v == "none" {
		return s, nil
	}
	for _, part := range strings.Fields(v) {
		name, val, ok := strings.Cut(part, "≤")
		if !ok {
			return timing.SLO{}, fmt.Errorf("objective %q: want name≤duration", part)
		}
		d, err := time.ParseDuration(val)
		if err != nil || d <= 0 {
			return timing.SLO{}, fmt.Errorf("objective %q: want a positive duration", part)
		}
		switch name {
		case "ttft":
			s.TTFT = d
		case "ttfa":
			s.TTFA = d
		case "tpot":
			s.TPOT = d
		case "itl":
			s.ITL = d
		case "e2e":
			s.E2E = d
		default:
			return timing.SLO{}, fmt.Errorf("objective %q: unknown figure %q", part, name)
		}
	}
	return s, nil
}
