package metrics

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func TestParseTypeLine(t *testing.T) {
	cases := []struct {
		line, name, typ string
		ok              bool
	}{
		{" TYPE vllm:e2e_request_latency_seconds histogram", "vllm:e2e_request_latency_seconds", "HISTOGRAM", true},
		{"\tTYPE\tc\tCounter", "c", "COUNTER", true},
		{" TYPE  c   gauge", "c", "GAUGE", true},
		{` TYPE "my.metric" counter`, "my.metric", "COUNTER", true},
		{` TYPE "a \"b\" c\\d\n" counter`, "a \"b\" c\\d\n", "COUNTER", true},
		{` TYPE ab"c d" counter`, "abc d", "COUNTER", true},
		{" TYPE c counter ", "c", "COUNTER ", true}, // the parser refuses the type
		{" TYPE c", "", "", false},
		{" TYPE c ", "", "", false},
		{" TYPE", "", "", false},
		{" TYPE 1c counter", "", "", false},
		{" TYPEc counter", "", "", false},
		{" HELP c counter", "", "", false},
		{` TYPE "a\x" counter`, "", "", false},
		{` TYPE "open counter`, "", "", false},
		{" TYPE c{ counter", "", "", false},
	}
	for _, c := range cases {
		name, typ, ok := parseTypeLine(c.line)
		if name != c.name || typ != c.typ || ok != c.ok {
			t.Errorf("parseTypeLine(%q) = %q, %q, %v; want %q, %q, %v", c.line, name, typ, ok, c.name, c.typ, c.ok)
		}
	}
}

// TestDeclaredFamilies: families declared with no sample are kept, with
// their kind; summaries, untyped families and _created gauges are not; and
// the reader keeps them whatever the chunks it is handed.
func TestDeclaredFamilies(t *testing.T) {
	body := "# HELP a_total A.\n# TYPE a_total counter\n" +
		"  # TYPE b histogram\n" +
		"# TYPE \"c.d\" gauge\n" +
		"# TYPE s summary\n# TYPE u untyped\n# TYPE a_created gauge\n" +
		"# TYPE e counter\ne{x=\"1\"} 2\n" +
		"# a comment that says TYPE f counter\n"
	for name, r := range map[string]io.Reader{
		"whole":       strings.NewReader(body),
		"byte a time": iotest.OneByteReader(strings.NewReader(body)),
		"half reads":  iotest.HalfReader(strings.NewReader(body)),
	} {
		s, err := Parse(r, Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := map[string]Kind{"a_total": Counter, "b": Histogram, "c.d": Gauge, "e": Counter}
		if len(s.Families) != len(want) {
			t.Errorf("%s: families %v; want %v", name, s.Families, want)
		}
		for n, k := range want {
			f := s.Families[n]
			if f == nil || f.Kind != k || (n != "e") != (len(f.Series) == 0) {
				t.Errorf("%s: %s = %+v; want a %v", name, n, f, k)
			}
		}
	}
	// A TYPE line longer than the reader keeps: the body parses, the
	// family is not declared.
	long := strings.Repeat("x", maxTypeLine)
	s, err := Parse(strings.NewReader("# TYPE "+long+" counter\n# TYPE c counter\n"), Options{})
	if err != nil || s.Families[long] != nil || s.Families["c"] == nil {
		t.Errorf("a TYPE line past %d bytes: %v, %d families", maxTypeLine, err, len(s.Families))
	}
	// Leading blanks do not make a comment a sample.
	if _, err := Parse(strings.NewReader("  # TYPE c counter\n\t# x\nc 1\n"), Options{MaxSamples: 1}); err != nil {
		t.Errorf("indented comments counted as samples: %v", err)
	}
}

// TestDeltaDeclaredAndVanished: a declared family is zero before its first
// sample; a family with series before and none after is a restart, one
// declared before and absent after is nothing; a changed _created refuses.
func TestDeltaDeclaredAndVanished(t *testing.T) {
	declared := parseString(t, "# TYPE c_total counter\n# TYPE h histogram\n")
	after := parseString(t, "# TYPE c_total counter\nc_total{m=\"a\"} 3\n"+hist("1", "1", "2", "3", "2"))
	w, warns := Delta(declared, after)
	if v, ok := w.Counter("c"); len(warns) != 0 || !ok || v != 3 {
		t.Errorf("declared then counted: %v, %v (%v)", v, ok, warns)
	}
	if h, ok := w.Histogram("h"); !ok || h.Count != 2 || h.Sum != 3 {
		t.Errorf("declared histogram then observed: %+v, %v", h, ok)
	}
	if w, warns := Delta(declared, parseString(t, "")); len(warns) != 0 || len(w.Families) != 0 {
		t.Errorf("declared then gone: %v, %v", w.Families, warns)
	}
	_, warns = Delta(after, parseString(t, "# TYPE c_total counter\nc_total{m=\"a\"} 4\n"))
	if len(warns) != 1 || warns[0].Family != "h" || !strings.Contains(warns[0].Reason, "absent after") {
		t.Errorf("a family gone: %v", warns)
	}
	_, warns = Delta(after, parseString(t, "# TYPE c_total counter\n# TYPE h histogram\n"))
	if len(warns) != 2 {
		t.Errorf("every series gone, families declared: %v", warns)
	}
	created := func(v, at string) string {
		return "# TYPE c_total counter\nc_total{m=\"a\"} " + v + "\n# TYPE c_created gauge\nc_created{m=\"a\"} " + at + "\n"
	}
	if _, warns := Delta(parseString(t, created("3", "100")), parseString(t, created("5", "100"))); len(warns) != 0 {
		t.Errorf("same _created: %v", warns)
	}
	w, warns = Delta(parseString(t, created("3", "100")), parseString(t, created("5", "200")))
	if len(warns) != 1 || !strings.Contains(warns[0].Reason, "_created") || len(w.Families) != 0 {
		t.Errorf("new _created: %v, %v", w.Families, warns)
	}
}

// FuzzTypeLine holds parseTypeLine to the text parser: where it reads a
// name and a type from a comment line the parser accepts, samples written
// under that name join the family the parser made of the line, with that
// type.
func FuzzTypeLine(f *testing.F) {
	for _, s := range []string{
		" TYPE vllm:e2e_request_latency_seconds histogram",
		"\tTYPE\tc\tcounter",
		` TYPE "my.metric" gauge`,
		` TYPE "a \"b\" c\\d\n" counter`,
		` TYPE ab"c d" counter`,
		" TYPE c_total COUNTER",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsRune(line, '\n') {
			return
		}
		name, typ, ok := parseTypeLine(line)
		p := expfmt.NewTextParser(model.UTF8Validation)
		if _, err := p.TextToMetricFamilies(strings.NewReader("#" + line + "\n")); err != nil || !ok {
			return
		}
		var samples string
		switch typ {
		case "COUNTER", "GAUGE":
			samples = sampleLine(name, "", "1")
		case "HISTOGRAM":
			samples = sampleLine(name+"_bucket", `le="+Inf"`, "1") + sampleLine(name+"_sum", "", "0.5") + sampleLine(name+"_count", "", "1")
		default:
			return
		}
		p = expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(strings.NewReader("#" + line + "\n" + samples))
		if err != nil {
			t.Fatalf("%q read as %q %s; samples under that name: %v", line, name, typ, err)
		}
		mf := fams[name]
		if mf == nil || mf.GetType().String() != typ || len(mf.GetMetric()) != 1 {
			t.Fatalf("%q read as %q %s; the parser made %v", line, name, typ, fams)
		}
	})
}

// sampleLine writes a sample of name, quoting the name where the legacy
// syntax cannot hold it.
func sampleLine(name, labels, value string) string {
	if model.LegacyValidation.IsValidMetricName(name) {
		if labels != "" {
			labels = "{" + labels + "}"
		}
		return name + labels + " " + value + "\n"
	}
	q := strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(name)
	if labels != "" {
		labels = "," + labels
	}
	return fmt.Sprintf("{\"%s\"%s} %s\n", q, labels, value)
}

// FuzzDeclared: however the body is cut into reads, Parse finds the same
// families, and each declared one has no series, a kept kind and no
// _created name among gauges.
func FuzzDeclared(f *testing.F) {
	f.Add([]byte("# TYPE a_total counter\n# TYPE b histogram\n# TYPE \"c.d\" gauge\n# TYPE e counter\ne 1\n"))
	f.Add([]byte("  # TYPE x summary\n# TYPE x_created gauge\n#TYPE y counter\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		opts := Options{MaxBytes: 1 << 16, MaxSamples: 1000}
		whole, err := Parse(bytes.NewReader(body), opts)
		bytewise, err2 := Parse(iotest.OneByteReader(bytes.NewReader(body)), opts)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("whole: %v; a byte a time: %v", err, err2)
		}
		if err != nil {
			return
		}
		if len(whole.Families) != len(bytewise.Families) {
			t.Fatalf("whole: %d families; a byte a time: %d", len(whole.Families), len(bytewise.Families))
		}
		for name, f := range whole.Families {
			g := bytewise.Families[name]
			if g == nil || g.Kind != f.Kind || len(g.Series) != len(f.Series) {
				t.Fatalf("%s: whole %+v; a byte a time %+v", name, f, g)
			}
			if f.Kind == Gauge && strings.HasSuffix(name, "_created") {
				t.Fatalf("%s kept as a gauge", name)
			}
		}
		whole.Server()
	})
}
