package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// csvSource reads BurstGPT and Azure CSV: a header naming the columns,
// then one request a line. Columns are found by name (case-insensitive),
// in any order, and columns the format does not use are ignored.
type csvSource struct {
	lines
	format Format
	unit   time.Duration
	model  []byte
	ncols  int
	// Column indices, -1 when absent.
	ts, in, out, modelCol, typ, session int
	fields                              [][]byte
	lastType, lastSession               string
}

// maxColumns bounds the columns of a CSV header.
const maxColumns = 1024

// The columns each format reads. The first three of each are required.
var (
	burstColumns = []string{"Timestamp", "Request tokens", "Response tokens", "Model", "Log Type", "Session ID"}
	azureColumns = []string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"}
)

// newCSVSource reads the header (the first line that is not blank). A
// header without a needed column ends the read at once.
func newCSVSource(l lines, f Format, unit time.Duration, model string) (*csvSource, error) {
	p := &csvSource{lines: l, format: f, unit: unit, model: []byte(strings.TrimSpace(model)),
		ts: -1, in: -1, out: -1, modelCol: -1, typ: -1, session: -1}
	var ln line
	for {
		var err error
		ln, err = p.lines.next()
		if err == io.EOF {
			return nil, &RowError{File: l.name, Line: p.lines.n + 1, Rule: RuleHeader, Msg: "no CSV header: the file is empty", fatal: true}
		}
		if err != nil {
			return nil, err
		}
		if ln.tooLong {
			return nil, &RowError{File: l.name, Line: ln.n, Rule: RuleHeader, Msg: fmt.Sprintf("header line is longer than %d MiB", MaxLineBytes>>20), fatal: true}
		}
		if !blank(ln.b) {
			break
		}
	}
	headerErr := func(format string, args ...any) error {
		return &RowError{File: l.name, Line: ln.n, Rule: RuleHeader, Msg: fmt.Sprintf(format, args...), fatal: true}
	}
	names, err := splitCSV(ln.b, nil, maxColumns)
	if err != nil {
		return nil, headerErr("not a CSV header: %v", err)
	}
	p.ncols = len(names)
	want := burstColumns
	idx := []*int{&p.ts, &p.in, &p.out, &p.modelCol, &p.typ, &p.session}
	if f == Azure {
		want = azureColumns
	}
	for i, n := range names {
		n = bytes.TrimSpace(n)
		for j, w := range want {
			if !strings.EqualFold(string(n), w) {
				continue
			}
			if *idx[j] >= 0 {
				return nil, headerErr("column %q appears twice (columns %d and %d)", w, *idx[j]+1, i+1)
			}
			*idx[j] = i
		}
	}
	for j := range 3 {
		if *idx[j] < 0 {
			return nil, headerErr("no %q column; a %s header has %s", want[j], f, quoteAll(want[:3]))
		}
	}
	if len(p.model) > 0 && p.modelCol < 0 {
		return nil, headerErr("no \"Model\" column to filter by model %q", model)
	}
	return p, nil
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

func (p *csvSource) next() (Row, dropReason, error) {
	ln, err := p.lines.record()
	if err != nil {
		return Row{}, keep, err
	}
	row, drop, f := p.parse(ln.b)
	if f != nil {
		return Row{}, keep, p.bad(ln, f)
	}
	row.Line = ln.n
	return row, drop, nil
}

func (p *csvSource) parse(b []byte) (Row, dropReason, *fault) {
	var err error
	p.fields, err = splitCSV(b, p.fields[:0], p.ncols)
	if err == errTooManyFields {
		return Row{}, keep, faultf(RuleField, "has more fields than the header's %d", p.ncols)
	}
	if err != nil {
		return Row{}, keep, faultf(RuleSyntax, "not a CSV record: %v", err)
	}
	if len(p.fields) != p.ncols {
		return Row{}, keep, faultf(RuleField, "has %d fields; the header has %d", len(p.fields), p.ncols)
	}
	col := func(i int) []byte { return bytes.TrimSpace(p.fields[i]) }
	var row Row
	if p.format == Azure {
		if row.At, err = azureTime(col(p.ts)); err != nil {
			return Row{}, keep, &fault{rule: RuleTimestamp, msg: err.Error()}
		}
	} else if row.At, err = timestamp(col(p.ts), p.unit, true); err != nil {
		return Row{}, keep, &fault{rule: RuleTimestamp, msg: err.Error()}
	}
	inName, outName := "Request tokens", "Response tokens"
	if p.format == Azure {
		inName, outName = "ContextTokens", "GeneratedTokens"
	}
	in, ok := integer(col(p.in), true)
	if !ok {
		return Row{}, keep, faultf(RuleInput, "%s %s is not an integer", inName, quoteLit(col(p.in)))
	}
	out, ok := integer(col(p.out), true)
	if !ok {
		return Row{}, keep, faultf(RuleOutput, "%s %s is not an integer", outName, quoteLit(col(p.out)))
	}
	if p.format == BurstGPT && out == 0 {
		return row, dropFailed, nil // a failed request, as the BurstGPT README describes
	}
	switch {
	case in < 1:
		return Row{}, keep, faultf(RuleInput, "%s %d is below 1", inName, in)
	case in > MaxTokens:
		return Row{}, keep, faultf(RuleInput, "%s %d exceeds the bound of %d tokens", inName, in, MaxTokens)
	case out < 1:
		return Row{}, keep, faultf(RuleOutput, "%s %d is below 1", outName, out)
	case out > MaxTokens:
		return Row{}, keep, faultf(RuleOutput, "%s %d exceeds the bound of %d tokens", outName, out, MaxTokens)
	}
	row.Input, row.Output = int(in), int(out)
	if p.format == BurstGPT {
		if p.typ >= 0 {
			row.Type = intern(&p.lastType, col(p.typ))
		}
		if p.session >= 0 {
			row.Session = intern(&p.lastSession, col(p.session))
		}
		if len(p.model) > 0 && !bytes.EqualFold(col(p.modelCol), p.model) {
			return row, dropModel, nil
		}
	}
	return row, keep, nil
}

// intern returns b as a string, reusing *last when it is the same text,
// so that a column of few values does not allocate a string a row.
func intern(last *string, b []byte) string {
	if string(b) != *last {
		*last = string(b)
	}
	return *last
}

// The layouts of Azure's TIMESTAMP column: "2023-11-16 18:15:46.6805900"
// (seven fractional digits, which Go reads, and Python's %f does not), or
// the same with a "T"; fractional digits are optional.
var azureLayouts = []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"}

// azureTime reads a TIMESTAMP as a duration since the Unix epoch, in UTC.
func azureTime(b []byte) (time.Duration, error) {
	if len(b) > 64 {
		return 0, fmt.Errorf("TIMESTAMP %s is not a date", quoteLit(b))
	}
	s := string(b)
	var t time.Time
	var err error
	for _, layout := range azureLayouts {
		if t, err = time.Parse(layout, s); err == nil {
			break
		}
	}
	if err != nil {
		return 0, fmt.Errorf("TIMESTAMP %q is not a date like 2023-11-16 18:15:46.6805900", s)
	}
	epoch := time.Unix(0, 0)
	if t.Before(epoch) || t.Sub(epoch) > MaxTime {
		return 0, fmt.Errorf("TIMESTAMP %q is outside 1970 to 2069", s)
	}
	return t.Sub(epoch), nil
}

// azureDate writes a duration since the Unix epoch as Azure's TIMESTAMP.
func azureDate(d time.Duration) string {
	return time.Unix(0, int64(d)).UTC().Format("2006-01-02 15:04:05.0000000")
}

// errTooManyFields reports a record with more fields than splitCSV's max.
var errTooManyFields = errors.New("too many fields")

// splitCSV splits one CSV record (RFC 4180, on one line) into dst, at
// most max fields. A quoted field may hold commas and doubled quotes; a
// quoted field that runs past the line end (a field with a line break) is
// an error.
func splitCSV(b []byte, dst [][]byte, max int) ([][]byte, error) {
	for i := 0; ; {
		if len(dst) == max {
			return dst, errTooManyFields
		}
		if i < len(b) && b[i] == '"' {
			var f []byte
			j := i + 1
			for {
				k := bytes.IndexByte(b[j:], '"')
				if k < 0 {
					return dst, fmt.Errorf("quoted field at column %d runs past the line end (fields with line breaks are not read)", i+1)
				}
				f = append(f, b[j:j+k]...)
				j += k + 1
				if j < len(b) && b[j] == '"' {
					f = append(f, '"')
					j++
					continue
				}
				break
			}
			if f == nil {
				f = []byte{}
			}
			dst = append(dst, f)
			if j == len(b) {
				return dst, nil
			}
			if b[j] != ',' {
				return dst, fmt.Errorf("text after a quoted field at column %d", j+1)
			}
			i = j + 1
			continue
		}
		k := bytes.IndexByte(b[i:], ',')
		if k < 0 {
			return append(dst, b[i:]), nil
		}
		dst = append(dst, b[i:i+k])
		i += k + 1
	}
}
