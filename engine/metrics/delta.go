package metrics

import (
	"fmt"
	"math"
	"sort"
)

// RankLabel is the label vLLM sets to the data-parallel engine index; Delta
// sums a family's deltas across it.
const RankLabel = "engine"

// Warning says why a family's delta was refused; the family is then absent
// from the Window.
type Warning struct {
	Family string
	Reason string
}

func (w Warning) String() string { return w.Family + ": " + w.Reason }

// Window is the difference of two snapshots: counters and histograms only,
// per family and label set (the RankLabel dropped and summed over).
type Window struct {
	Families map[string]*Family
	// server is the second scrape's.
	server Server
}

// Delta subtracts before from after per family and label set (label order
// does not matter), then sums the data-parallel ranks.
//
// What a fresh server serves is not a restart: a family or label set absent
// from before, or declared there with no sample, counts as zero
// (prometheus_client makes a labelled series at its first observation, and
// through a multiprocess collector serves no family until then). A restart
// is refused: a value that went down, a series present before and gone
// after (a family gone altogether too), or a series whose _created time
// changed (a restarted server that has already counted past the old
// values). Families refused come back as warnings, sorted by family name.
func Delta(before, after Snapshot) (Window, []Warning) {
	w := Window{Families: map[string]*Family{}, server: after.Server()}
	var warns []Warning
	names := make([]string, 0, len(after.Families))
	for n := range after.Families {
		names = append(names, n)
	}
	for n, bf := range before.Families {
		if _, ok := after.Families[n]; !ok && (bf.Kind == Counter || bf.Kind == Histogram) && len(bf.Series) > 0 {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		af, ok := after.Families[name]
		if !ok {
			warns = append(warns, Warning{Family: name, Reason: "present before, absent after: a restart, or another server"})
			continue
		}
		if af.Kind != Counter && af.Kind != Histogram {
			continue
		}
		var bf *Family
		if before.Families != nil {
			bf = before.Families[name]
		}
		f, reason := deltaFamily(bf, af)
		if reason != "" {
			warns = append(warns, Warning{Family: name, Reason: reason})
			continue
		}
		w.Families[name] = f
	}
	return w, warns
}

// Server is the kind of server of the window's second scrape
// ([Snapshot.Server]); ServerUnknown for a Window not made by Delta.
func (w Window) Server() Server { return w.server }

// HasRequestCounter reports whether the window holds a finished-request
// counter (one of RequestNames, declared with no sample counting as zero),
// so that [Window.Requests] can be set beside the client's count. False for
// llama.cpp, which has none ([Server.CountsRequests]), and where the
// counter was refused.
func (w Window) HasRequestCounter() bool {
	f, ok := w.lookup(RequestNames)
	return ok && f.Kind == Counter
}

func deltaFamily(bf, af *Family) (*Family, string) {
	if bf != nil && bf.Kind != af.Kind {
		return nil, fmt.Sprintf("type changed from %v to %v", bf.Kind, af.Kind)
	}
	prev := map[string]*Series{}
	if bf != nil {
		for i := range bf.Series {
			s := &bf.Series[i]
			if r := checkSeries(af.Kind, s); r != "" {
				return nil, "before: " + r
			}
			prev[labelKey(s.Labels, "")] = s
		}
	}
	out := &Family{Name: af.Name, Kind: af.Kind}
	merged := map[string]int{}
	seen := 0
	for i := range af.Series {
		s := &af.Series[i]
		if r := checkSeries(af.Kind, s); r != "" {
			return nil, "after: " + r
		}
		p, ok := prev[labelKey(s.Labels, "")]
		if ok {
			seen++
		}
		d, r := sub(af.Kind, p, s)
		if r != "" {
			return nil, r + " (" + labelString(s.Labels) + ")"
		}
		k := labelKey(s.Labels, RankLabel)
		j, ok := merged[k]
		if !ok {
			d.Labels = without(d.Labels, RankLabel)
			merged[k] = len(out.Series)
			out.Series = append(out.Series, d)
			continue
		}
		if r := add(&out.Series[j], d); r != "" {
			return nil, r
		}
	}
	if seen < len(prev) {
		return nil, "a label set present before is gone after: a restart"
	}
	return out, ""
}

func labelString(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := "{"
	for i, k := range keys {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("%s=%q", k, l[k])
	}
	return s + "}"
}

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v < 0 }

// checkSeries refuses values no delta can be taken of.
func checkSeries(k Kind, s *Series) string {
	switch k {
	case Counter:
		if bad(s.Value) {
			return fmt.Sprintf("value %v is NaN, infinite or negative", s.Value)
		}
	case Histogram:
		if bad(s.Count) || math.IsNaN(s.Sum) || math.IsInf(s.Sum, 0) {
			return fmt.Sprintf("count %v or sum %v is NaN, infinite or negative", s.Count, s.Sum)
		}
		n := len(s.Buckets)
		if n == 0 || !math.IsInf(s.Buckets[n-1].UpperBound, 1) {
			return "histogram without a +Inf bucket"
		}
		for i, b := range s.Buckets {
			if math.IsNaN(b.UpperBound) || bad(b.Count) {
				return fmt.Sprintf("bucket le=%v count %v is NaN or negative", b.UpperBound, b.Count)
			}
			if i > 0 && (b.UpperBound == s.Buckets[i-1].UpperBound || b.Count < s.Buckets[i-1].Count) {
				return fmt.Sprintf("buckets not strictly increasing in le or cumulative in count at le=%v", b.UpperBound)
			}
		}
		if s.Buckets[n-1].Count != s.Count {
			return fmt.Sprintf("+Inf bucket %v differs from count %v", s.Buckets[n-1].Count, s.Count)
		}
	}
	return ""
}

// sub returns a−p (p nil counts as zero).
func sub(k Kind, p, a *Series) (Series, string) {
	d := Series{Labels: a.Labels}
	if p != nil && p.Created != 0 && a.Created != 0 && p.Created != a.Created {
		return d, fmt.Sprintf("series made anew (_created %v, before %v): a restart", a.Created, p.Created)
	}
	if k == Counter {
		d.Value = a.Value
		if p != nil {
			d.Value -= p.Value
		}
		if d.Value < 0 {
			return d, fmt.Sprintf("counter went down by %v: a restart", -d.Value)
		}
		return d, ""
	}
	d.Sum, d.Count = a.Sum, a.Count
	d.Buckets = append([]Bucket(nil), a.Buckets...)
	if p == nil {
		return d, ""
	}
	if !sameLayout(p.Buckets, a.Buckets) {
		return d, fmt.Sprintf("bucket set changed from %v to %v", Layout(p.Buckets), Layout(a.Buckets))
	}
	d.Sum -= p.Sum
	d.Count -= p.Count
	for i := range d.Buckets {
		d.Buckets[i].Count -= p.Buckets[i].Count
		if d.Buckets[i].Count < 0 {
			return d, fmt.Sprintf("bucket le=%v went down: a restart", d.Buckets[i].UpperBound)
		}
	}
	if d.Count < 0 || d.Sum < 0 {
		return d, "count or sum went down: a restart"
	}
	return d, ""
}

// add sums d into s (same family, another rank).
func add(s *Series, d Series) string {
	s.Value += d.Value
	if len(s.Buckets) == 0 && len(d.Buckets) == 0 {
		return ""
	}
	if !sameLayout(s.Buckets, d.Buckets) {
		return fmt.Sprintf("ranks have different bucket sets %v and %v", Layout(s.Buckets), Layout(d.Buckets))
	}
	s.Sum += d.Sum
	s.Count += d.Count
	for i := range s.Buckets {
		s.Buckets[i].Count += d.Buckets[i].Count
	}
	return ""
}

func sameLayout(a, b []Bucket) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].UpperBound != b[i].UpperBound {
			return false
		}
	}
	return true
}

// Layout lists the upper bounds of buckets, +Inf included.
func Layout(buckets []Bucket) []float64 {
	out := make([]float64, len(buckets))
	for i, b := range buckets {
		out[i] = b.UpperBound
	}
	return out
}
