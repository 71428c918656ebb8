// Package metrics reads an inference server's own view of a measured window
// from its Prometheus /metrics endpoint: two scrapes, one before and one after
// the run, subtracted per family and label set.
//
// Only counters and classic histograms are windowed; gauges and summaries say
// nothing about an interval and are dropped. A family whose delta would be
// wrong (a restart, a changed bucket layout, NaN or negative values, a
// histogram without +Inf) is refused with a [Warning] and no figure.
//
// Figures: the mean of a histogram is exact (Δsum/Δcount); percentiles follow
// Prometheus's histogram_quantile over the bucket deltas (linear interpolation
// inside the bucket), each with its bucket's bounds as the error bar.
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
}

// Family is a metric family by its exposed name.
type Family struct {
	Name   string
	Kind   Kind
	Series []Series
}

// Snapshot is one scrape: families by exposed name. Summaries, untyped
// families and prometheus_client's *_created gauges are left out.
type Snapshot struct {
	Families map[string]*Family
}

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
// ErrTooManySamples past maxSamples non-comment lines, so that the parser
// stops early on a hostile body.
type boundedReader struct {
	r          io.Reader
	left       int64
	maxSamples int
	samples    int
	lineStart  bool
	commented  bool
	err        error
}

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
		if b.lineStart {
			b.lineStart = false
			b.commented = c == '#' || c == '\n'
			if !b.commented {
				b.samples++
				if b.samples > b.maxSamples {
					b.err = ErrTooManySamples
					return 0, b.err
				}
			}
		}
		if c == '\n' {
			b.lineStart = true
		}
	}
	return n, err
}

// Parse reads exposition text (format 0.0.4) within opts' limits.
func Parse(r io.Reader, opts Options) (Snapshot, error) {
	opts = opts.withDefaults()
	br := &boundedReader{r: r, left: opts.MaxBytes, maxSamples: opts.MaxSamples, lineStart: true}
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
	return s, nil
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
