// Package metrics reads an inference server's own view of a measured window
// from its Prometheus /metrics endpoint: two scrapes, one before and one after
// the run, subtracted per family and label set.
//
// Only counters and classic histograms are windowed; gauges and summaries say
// nothing about an interval and are dropped. A family whose delta would be
// wrong (a restart, a changed bucket layout, NaN or negative values, a
// histogram without +Inf) is refused with a [Warning] and no figure.
//
// Servers as they really behave: Python's prometheus_client (vLLM, SGLang)
// makes a labelled series at its first observation, so a fresh server
// declares its families (# TYPE) with no sample, or, through a
// multiprocess collector (SGLang), serves nothing at all. A family or series
// absent from the first scrape is a series at zero; a declared family with no
// sample is kept in the [Snapshot] with no series. What is refused is what a
// restart does to a series present in both scrapes: a value that went down, a
// series that vanished, or a changed _created timestamp.
//
// Figures: the mean of a histogram is exact (Δsum/Δcount). Percentiles are
// histogram_quantile over the bucket deltas (linear interpolation inside the
// bucket), each with its bucket's bounds, narrowed by what the exact sum
// allows; [Percentile] prints the interpolated point only where the buckets
// and the sum do not rule it out (see [Hist.Quantile]).
//
// The package is a leaf: it imports nothing else of this module.
package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Default limits of [Options].
const (
	DefaultMaxBytes   = 16 << 20
	DefaultMaxSamples = 100_000
)

// Accept is the content type Scrape asks for: the classic text format, never
// OpenMetrics (whose _total/_created samples map differently onto families).
const Accept = "text/plain; version=0.0.4"

// ErrBodyTooLarge and ErrTooManySamples report a body past Options' limits.
var (
	ErrBodyTooLarge   = errors.New("metrics: body exceeds the byte limit")
	ErrTooManySamples = errors.New("metrics: body exceeds the sample limit")
)

// Options bound a scrape. Zero values take the defaults.
type Options struct {
	// MaxBytes caps the body (DefaultMaxBytes).
	MaxBytes int64
	// MaxSamples caps the sample lines (each a series to Prometheus: one
	// per counter label set, one per histogram bucket, _sum and _count).
	MaxSamples int
}

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxSamples <= 0 {
		o.MaxSamples = DefaultMaxSamples
	}
	return o
}

// Kind is the type of a family.
type Kind int

// Kinds of families kept in a Snapshot.
const (
	Counter Kind = iota
	Gauge
	Histogram
)

func (k Kind) String() string {
	switch k {
	case Counter:
		return "counter"
	case Gauge:
		return "gauge"
	case Histogram:
		return "histogram"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Bucket is one cumulative histogram bucket: Count observations ≤ UpperBound.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// Series is one label set of a family. Counters and gauges use Value;
// histograms use Buckets (ascending, +Inf last when present), Sum and Count.
type Series struct {
	Labels  map[string]string
	Value   float64
	Buckets []Bucket
	Sum     float64
	Count   float64
	// Created is when the server made the series (prometheus_client's
	// <name>_created sample, Unix seconds) for a counter or histogram; 0
	// when the server does not say (Rust servers, multiprocess mode).
	Created float64
}

// Family is a metric family by its exposed name. A family declared by a
// # TYPE line with no sample yet has no Series.
type Family struct {
	Name   string
	Kind   Kind
	Series []Series
}

// Snapshot is one scrape: families by exposed name. Summaries, untyped
// families and prometheus_client's *_created gauges are left out (the
// latter become [Series.Created]). Families declared with no sample
// (prometheus_client before a labelled family's first observation) are kept
// with no series.
type Snapshot struct {
	Families map[string]*Family
}

// Server is the kind of server whose families a scrape holds, told by their
// prefixes.
type Server string

// Servers told apart by [Snapshot.Server]; ServerUnknown when a scrape holds
// none of their families.
const (
	ServerUnknown  Server = ""
	ServerVLLM     Server = "vLLM"
	ServerSGLang   Server = "SGLang"
	ServerTGI      Server = "TGI"
	ServerLlamaCpp Server = "llama.cpp"
)

// serverPrefixes in the order a scrape holding several is told.
var serverPrefixes = []struct {
	prefix string
	server Server
}{{"vllm:", ServerVLLM}, {"sglang:", ServerSGLang}, {"tgi_", ServerTGI}, {"llamacpp:", ServerLlamaCpp}}

// Server says whose families the scrape holds, declared ones included:
// vLLM's "vllm:", SGLang's "sglang:", TGI's "tgi_" or llama.cpp's
// "llamacpp:" prefix. ServerUnknown for a scrape with none of them (an
// empty body, a vLLM without stats logging, an SGLang before its first
// request).
func (s Snapshot) Server() Server {
	for _, p := range serverPrefixes {
		for name := range s.Families {
			if strings.HasPrefix(name, p.prefix) {
				return p.server
			}
		}
	}
	return ServerUnknown
}

// CountsRequests says whether a server of this kind counts the requests it
// finishes on /metrics: false for llama.cpp, which has no such counter, so
// that a window's request count cannot be checked there; true for the
// others and for an unknown server, whose missing counter is worth a word.
func (s Server) CountsRequests() bool { return s != ServerLlamaCpp }

// Scrape GETs url with client (http.DefaultClient when nil) and parses the
// body. The deadline is ctx's; the body and sample count are bounded by opts.
func Scrape(ctx context.Context, client *http.Client, url string, opts Options) (Snapshot, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Snapshot{}, fmt.Errorf("metrics: %w", err)
	}
	req.Header.Set("Accept", Accept)
	resp, err := client.Do(req)
	if err != nil {
		return Snapshot{}, fmt.Errorf("metrics: scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return Snapshot{}, fmt.Errorf("metrics: scrape %s: %s", url, resp.Status)
	}
	s, err := Parse(resp.Body, opts)
	if err != nil {
		return Snapshot{}, fmt.Errorf("metrics: scrape %s: %w", url, err)
	}
	return s, nil
}

// boundedReader fails with ErrBodyTooLarge past max bytes and with
// ErrTooManySamples past maxSamples sample lines, so that the parser stops
// early on a hostile body. It also keeps the # TYPE lines that pass through
// it (each up to maxTypeLine bytes), since the parser drops a declared
// family that has no sample.
type boundedReader struct {
	r          io.Reader
	left       int64
	maxSamples int
	samples    int
	state      lineState
	line       []byte // the comment line being read, after its '#'
	keep       bool   // whether line is still short enough to keep
	types      []string
	err        error
}

// lineState is where the reader is within a line.
type lineState uint8

const (
	lineStart   lineState = iota // blanks and tabs at most so far
	lineComment                  // after a leading '#'
	lineSample                   // anything else: a sample
)

// maxTypeLine bounds a kept # TYPE line: server names are far shorter.
const maxTypeLine = 4096

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.left < int64(len(p))-1 { // read at most one byte past the limit
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	if int64(n) > b.left {
		b.err = ErrBodyTooLarge
		return 0, b.err
	}
	b.left -= int64(n)
	for _, c := range p[:n] {
		if c == '\n' {
			if b.state == lineComment && b.keep && isTypeLine(b.line) {
				b.types = append(b.types, string(b.line))
			}
			b.state, b.line = lineStart, b.line[:0]
			continue
		}
		switch b.state {
		case lineStart:
			switch c {
			case ' ', '\t':
			case '#':
				b.state, b.keep = lineComment, true
			default:
				b.state = lineSample
				b.samples++
				if b.samples > b.maxSamples {
					b.err = ErrTooManySamples
					return 0, b.err
				}
			}
		case lineComment:
			if b.keep {
				if len(b.line) == maxTypeLine {
					b.keep = false
				} else {
					b.line = append(b.line, c)
				}
			}
		}
	}
	return n, err
}

// isTypeLine reports whether a comment line (after its '#') starts with the
// TYPE keyword, as the text format has it: blanks, "TYPE", a blank.
func isTypeLine(l []byte) bool {
	l = bytes.TrimLeft(l, " \t")
	return len(l) > 4 && string(l[:4]) == "TYPE" && (l[4] == ' ' || l[4] == '\t')
}

// parseTypeLine reads the family name and type of a # TYPE line (after its
// '#') as the text parser does: the name bare or double-quoted (with \\,
// \n and \" escapes), then blanks, then the type to the end of the line.
// ok is false for a line the parser would not have taken.
func parseTypeLine(l string) (name, typ string, ok bool) {
	l = strings.TrimLeft(l, " \t")
	l, found := strings.CutPrefix(l, "TYPE")
	if !found || l == "" || l[0] != ' ' && l[0] != '\t' {
		return "", "", false
	}
	l = strings.TrimLeft(l, " \t")
	if l == "" || !metricNameStart(l[0]) {
		return "", "", false
	}
	var nb strings.Builder
	quoted, escaped := false, false
	i := 0
name:
	for i < len(l) {
		c := l[i]
		switch {
		case escaped:
			switch c {
			case '\\', '"':
				nb.WriteByte(c)
			case 'n':
				nb.WriteByte('\n')
			default:
				return "", "", false
			}
			escaped = false
		case c == '"':
			quoted = !quoted
			if !quoted {
				i++
				break name
			}
		case c == '\\':
			escaped = true
		default:
			nb.WriteByte(c)
		}
		i++
		if i < len(l) && (!metricNameContinuation(l[i], quoted) || !quoted && l[i] == ' ') {
			break
		}
	}
	if i >= len(l) || (l[i] != ' ' && l[i] != '\t') {
		return "", "", false
	}
	typ = strings.TrimLeft(l[i:], " \t")
	if typ == "" {
		return "", "", false
	}
	return nb.String(), strings.ToUpper(typ), true
}

func metricNameStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '"' || c == ':'
}

// metricNameContinuation is the parser's test: inside quotes any byte goes
// on (it checks each byte as a rune, always valid UTF-8).
func metricNameContinuation(c byte, quoted bool) bool {
	return quoted || metricNameStart(c) || c >= '0' && c <= '9'
}

// Parse reads exposition text (format 0.0.4) within opts' limits.
func Parse(r io.Reader, opts Options) (Snapshot, error) {
	opts = opts.withDefaults()
	br := &boundedReader{r: r, left: opts.MaxBytes, maxSamples: opts.MaxSamples}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(br)
	if br.err != nil {
		return Snapshot{}, br.err
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("parse: %w", err)
	}
	s := Snapshot{Families: make(map[string]*Family, len(fams))}
	for name, mf := range fams {
		f := &Family{Name: name}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			f.Kind = Counter
		case dto.MetricType_GAUGE:
			if strings.HasSuffix(name, "_created") {
				continue
			}
			f.Kind = Gauge
		case dto.MetricType_HISTOGRAM:
			f.Kind = Histogram
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			f.Series = append(f.Series, fromDTO(f.Kind, m))
		}
		s.Families[name] = f
	}
	s.addDeclared(br.types)
	s.attachCreated(fams)
	return s, nil
}

// addDeclared keeps the families declared by # TYPE lines that the parser
// dropped for having no sample: each a series at zero to Delta.
func (s Snapshot) addDeclared(lines []string) {
	for _, l := range lines {
		name, typ, ok := parseTypeLine(l)
		if !ok {
			continue
		}
		if _, ok := s.Families[name]; ok {
			continue
		}
		var k Kind
		switch typ {
		case "COUNTER":
			k = Counter
		case "GAUGE":
			if strings.HasSuffix(name, "_created") {
				continue
			}
			k = Gauge
		case "HISTOGRAM":
			k = Histogram
		default:
			continue
		}
		s.Families[name] = &Family{Name: name, Kind: k}
	}
}

// attachCreated sets Series.Created from prometheus_client's <base>_created
// gauges: those of counter <base>_total (or <base>) and of histogram <base>.
func (s Snapshot) attachCreated(fams map[string]*dto.MetricFamily) {
	for name, mf := range fams {
		base, ok := strings.CutSuffix(name, "_created")
		if !ok || mf.GetType() != dto.MetricType_GAUGE {
			continue
		}
		for _, target := range []string{base + "_total", base} {
			f, ok := s.Families[target]
			if !ok || (f.Kind != Counter && f.Kind != Histogram) || len(f.Series) == 0 {
				continue
			}
			created := make(map[string]float64, len(mf.GetMetric()))
			for _, m := range mf.GetMetric() {
				labels := make(map[string]string, len(m.GetLabel()))
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				created[labelKey(labels, "")] = m.GetGauge().GetValue()
			}
			for i := range f.Series {
				if c, ok := created[labelKey(f.Series[i].Labels, "")]; ok {
					f.Series[i].Created = c
				}
			}
			break
		}
	}
}

func fromDTO(k Kind, m *dto.Metric) Series {
	s := Series{Labels: make(map[string]string, len(m.GetLabel()))}
	for _, l := range m.GetLabel() {
		s.Labels[l.GetName()] = l.GetValue()
	}
	switch k {
	case Counter:
		s.Value = m.GetCounter().GetValue()
	case Gauge:
		s.Value = m.GetGauge().GetValue()
	case Histogram:
		h := m.GetHistogram()
		s.Sum = h.GetSampleSum()
		s.Count = float64(h.GetSampleCount())
		if h.SampleCountFloat != nil {
			s.Count = h.GetSampleCountFloat()
		}
		for _, b := range h.GetBucket() {
			c := float64(b.GetCumulativeCount())
			if b.CumulativeCountFloat != nil {
				c = b.GetCumulativeCountFloat()
			}
			s.Buckets = append(s.Buckets, Bucket{UpperBound: b.GetUpperBound(), Count: c})
		}
		sort.SliceStable(s.Buckets, func(i, j int) bool { return s.Buckets[i].UpperBound < s.Buckets[j].UpperBound })
	}
	return s
}

// labelKey is a label set's identity regardless of order, without drop.
func labelKey(labels map[string]string, drop string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		if k != drop {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b bytes.Buffer
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0xff)
		b.WriteString(labels[k])
		b.WriteByte(0xfe)
	}
	return b.String()
}

func without(labels map[string]string, drop string) map[string]string {
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		if k != drop {
			out[k] = v
		}
	}
	return out
}
