package workload

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// A Reader reads the rows of one trace or dataset file, one at a time,
// as bufio.Scanner does:
//
//	r, err := workload.NewReader(f, "trace.jsonl", nil)
//	if err != nil { ... }
//	for r.Next() {
//		row := r.Row()
//		...
//	}
//	if err := r.Err(); err != nil { ... } // the first bad row, with its line
//
// It holds one line (or ShareGPT record) at a time, so its memory does
// not grow with the file, unless Options.Sort makes it hold every row.
// A bad row ends the read with a *RowError unless Options.SkipBad is set;
// a caller that must not act on part of a refused file reads every row
// before it acts (ReadAll does).
type Reader struct {
	name   string
	format Format
	opts   resolved
	src    source

	zero, last       time.Duration
	zeroSet, hasLast bool

	sorting bool  // Sort: rows are read at the first Next
	sorted  []Row // Sort: the rows, sorted, with raw timestamps
	si      int

	row   Row
	err   error
	done  bool
	stats Stats
}

// NewReader returns a reader of the file r, whose name (a path, say)
// prefixes every error. opts may be nil. With no Options.Format it reads
// the start of the file to infer the format; an error then says why none
// fits. It also returns the error of options that do not fit the format,
// and of a CSV header without a needed column.
func NewReader(r io.Reader, name string, opts *Options) (*Reader, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	br, err := openBuffered(r)
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", name, err)
	}
	f := o.Format
	l := lines{r: br, name: name}
	if f == "" {
		if f, err = detect(&l); err != nil {
			return nil, err
		}
	} else if f, err = ParseFormat(string(f)); err != nil {
		return nil, err
	}
	ro, err := o.resolve(f)
	if err != nil {
		return nil, err
	}
	rd := &Reader{name: name, format: f, opts: ro, sorting: o.Sort}
	switch f {
	case Mooncake, Bailian:
		rd.src = &traceSource{lines: l, format: f, unit: ro.unit, block: ro.block}
	case BurstGPT, Azure:
		if rd.src, err = newCSVSource(l, f, ro.unit, o.Model); err != nil {
			return nil, err
		}
	case ShareGPT:
		rd.src = newShareGPTSource(l.rest(), name, o.AllTurns)
	case JSONL:
		rd.src = &jsonlSource{lines: l}
	}
	return rd, nil
}

// Format returns the format the reader reads.
func (r *Reader) Format() Format { return r.format }

// BlockSize returns the tokens per hash id of the rows' HashIDs, 0 for a
// format without them.
func (r *Reader) BlockSize() int { return r.opts.block }

// Row returns the row of the last successful Next. Each call of Next
// makes a new Row, so a caller may keep rows.
func (r *Reader) Row() Row { return r.row }

// Err returns the error that ended the read, nil at the end of the file.
func (r *Reader) Err() error { return r.err }

// Stats returns the counts of the rows read so far.
func (r *Reader) Stats() Stats {
	s := r.stats
	s.Bad = maps.Clone(s.Bad)
	return s
}

// Next advances to the next row, which Row then returns. It returns false
// at the end of the file, at Options.End or Limit, and at an error (Err).
func (r *Reader) Next() bool {
	if r.done {
		return false
	}
	if r.sorting {
		return r.nextSorted()
	}
	for {
		row, drop, err := r.src.next()
		if err == io.EOF {
			return r.stop(nil)
		}
		if err != nil {
			if r.skip(err) {
				continue
			}
			return r.stop(err)
		}
		if row.Timed() {
			if r.hasLast && row.At < r.last {
				if err := r.orderError(row); r.skip(err) {
					continue
				} else {
					return r.stop(err)
				}
			}
			r.last, r.hasLast = row.At, true
			if !r.zeroSet {
				r.zero, r.zeroSet = row.At, true
				if r.opts.Absolute {
					r.zero = 0
				}
			}
		}
		if !r.kept(row, drop) {
			continue
		}
		if row.Timed() {
			off := row.At - r.zero
			if off < r.opts.Start {
				r.stats.BeforeStart++
				continue
			}
			if r.opts.End > 0 && off > r.opts.End {
				r.stats.Stopped = true
				return r.stop(nil)
			}
			if err := r.schedule(&row, off); err != nil {
				if r.skip(err) {
					continue
				}
				return r.stop(err)
			}
		}
		return r.emit(row)
	}
}

// kept counts a row that a filter drops and reports whether it stays.
func (r *Reader) kept(row Row, drop dropReason) bool {
	switch drop {
	case dropFailed:
		r.stats.Failed++
		return false
	case dropModel:
		r.stats.OtherModel++
		return false
	case dropNoUser:
		r.stats.NoUser++
		return false
	}
	if r.opts.MaxInput > 0 && row.Input > r.opts.MaxInput {
		r.stats.OverInput++
		return false
	}
	if row.Input > 0 && row.Input < r.opts.MinInput {
		r.stats.UnderInput++
		return false
	}
	return true
}

// schedule sets row.At from its offset: (offset − Start) / Speedup.
func (r *Reader) schedule(row *Row, off time.Duration) error {
	d := off - r.opts.Start
	if r.opts.Speedup != 1 {
		v := math.Round(float64(d) / r.opts.Speedup)
		if v > float64(MaxTime) {
			return &RowError{File: r.name, Line: row.Line, Record: r.format == ShareGPT, Rule: RuleTimestamp,
				Msg: fmt.Sprintf("offset %v at speedup %g exceeds the bound of 100 years", d, r.opts.Speedup)}
		}
		d = time.Duration(v)
	}
	row.At = d
	return nil
}

// emit returns row from Next, after MaxOutput and Limit.
func (r *Reader) emit(row Row) bool {
	if r.opts.MaxOutput > 0 && row.Output > r.opts.MaxOutput {
		row.Output = r.opts.MaxOutput
		r.stats.Capped++
	}
	r.row = row
	r.stats.Rows++
	if r.opts.Limit > 0 && r.stats.Rows >= r.opts.Limit {
		r.done = true
		r.stats.Stopped = !r.sorting // with Sort, every row was read
	}
	return true
}

func (r *Reader) stop(err error) bool {
	r.err, r.done, r.row, r.sorted = err, true, Row{}, nil
	return false
}

// skip counts err's row under SkipBad and reports whether reading goes on.
func (r *Reader) skip(err error) bool {
	var re *RowError
	if err == io.EOF || !r.opts.SkipBad || !errors.As(err, &re) || re.fatal {
		return false
	}
	if r.stats.Bad == nil {
		r.stats.Bad = map[Rule]int{}
	}
	r.stats.Bad[re.Rule]++
	return true
}

func (r *Reader) orderError(row Row) *RowError {
	at, last := fmt.Sprint(row.At), fmt.Sprint(r.last)
	if r.format == Azure {
		at, last = azureDate(row.At), azureDate(r.last)
	}
	return &RowError{File: r.name, Line: row.Line, Rule: RuleOrder,
		Msg: fmt.Sprintf("timestamp %s is before the previous row's %s; the rows must be in time order (Options.Sort sorts them)", at, last)}
}

// nextSorted is Next under Options.Sort: the first call reads and sorts
// every row.
func (r *Reader) nextSorted() bool {
	if r.sorted == nil && r.si == 0 {
		if err := r.readAll(); err != nil {
			return r.stop(err)
		}
	}
	for r.si < len(r.sorted) {
		row := r.sorted[r.si]
		r.si++
		off := row.At - r.zero
		if off < r.opts.Start {
			r.stats.BeforeStart++
			continue
		}
		if r.opts.End > 0 && off > r.opts.End {
			r.stats.AfterEnd += len(r.sorted) - r.si + 1
			return r.stop(nil)
		}
		if err := r.schedule(&row, off); err != nil {
			if r.skip(err) {
				continue
			}
			return r.stop(err)
		}
		r.emit(row)
		if r.done { // Limit: count what is left
			for _, rest := range r.sorted[r.si:] {
				if r.opts.End > 0 && rest.At-r.zero > r.opts.End {
					r.stats.AfterEnd++
				} else if rest.At-r.zero >= r.opts.Start {
					r.stats.OverLimit++
				} else {
					r.stats.BeforeStart++
				}
			}
			r.sorted = nil
		}
		return true
	}
	return r.stop(nil)
}

// readAll reads every row for Sort; the zero point is the earliest
// timestamp of the rows that pass the rules.
func (r *Reader) readAll() error {
	var rows []Row
	minAt := time.Duration(math.MaxInt64)
	for {
		row, drop, err := r.src.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if r.skip(err) {
				continue
			}
			return err
		}
		minAt = min(minAt, row.At)
		if r.kept(row, drop) {
			rows = append(rows, row)
		}
	}
	slices.SortStableFunc(rows, func(a, b Row) int { return cmp.Compare(a.At, b.At) })
	r.zero = minAt
	if r.opts.Absolute {
		r.zero = 0
	}
	if rows == nil {
		rows = []Row{}
	}
	r.sorted = rows
	return nil
}

// ReadAll reads every row of r, as a caller that refuses a file with a bad
// row must before it sends anything.
func ReadAll(r io.Reader, name string, opts *Options) ([]Row, Stats, error) {
	rd, err := NewReader(r, name, opts)
	if err != nil {
		return nil, Stats{}, err
	}
	var rows []Row
	for rd.Next() {
		rows = append(rows, rd.Row())
	}
	return rows, rd.Stats(), rd.Err()
}

// rest returns the unread file, for a format read without lines. Only
// detect reads ahead, and it leaves a ShareGPT file unread.
func (l *lines) rest() io.Reader { return l.r }

// detect infers the format from the start of the file: a '[' before
// anything else is ShareGPT; otherwise the first line that is not blank
// decides, and stays unread for the format's reader. A JSON object with
// input_length or hash_ids is a trace: Bailian if it has chat_id,
// parent_chat_id, turn or type, else Mooncake. One with prompt or
// messages is custom JSONL. A CSV header with Timestamp and Request tokens
// is BurstGPT; one with TIMESTAMP and ContextTokens is Azure.
func detect(l *lines) (Format, error) {
	// Look past leading white space without consuming it.
	for n := 1; n <= bufSize; n++ {
		b, err := l.r.Peek(n)
		if len(b) < n {
			if err == io.EOF || errors.Is(err, bufio.ErrBufferFull) {
				break
			}
			return "", fmt.Errorf("%s: read: %w", l.name, err)
		}
		c := b[n-1]
		if c == '[' {
			return ShareGPT, nil
		}
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			break
		}
	}
	for {
		ln, err := l.next()
		if err == io.EOF {
			return "", fmt.Errorf("%s: cannot infer the format of an empty file; name one with Options.Format", l.name)
		}
		if err != nil {
			return "", err
		}
		if ln.tooLong {
			return "", fmt.Errorf("%s line %d: cannot infer the format: the line is longer than %d MiB", l.name, ln.n, MaxLineBytes>>20)
		}
		if blank(ln.b) {
			continue
		}
		f, err := classify(ln.b)
		if err != nil {
			return "", fmt.Errorf("%s line %d: cannot infer the format: %v; name one with Options.Format", l.name, ln.n, err)
		}
		l.unread(ln)
		return f, nil
	}
}

// classify names the format of a first line.
func classify(b []byte) (Format, error) {
	s := jscan{b: b}
	s.ws()
	if s.peek() == '{' {
		s.i++
		keys := map[string]bool{}
		s.ws()
		if !s.eat('}') {
			for {
				s.ws()
				k, err := s.key()
				if err != nil {
					return "", fmt.Errorf("the line starts a JSON object but is not valid JSON: %v", err)
				}
				keys[string(k)] = true
				if err := s.skip(0); err != nil {
					return "", fmt.Errorf("the line starts a JSON object but is not valid JSON: %v", err)
				}
				s.ws()
				if s.eat(',') {
					continue
				}
				if s.eat('}') {
					break
				}
				return "", fmt.Errorf("the line starts a JSON object but is not valid JSON: %v", s.fail("want ',' or '}'"))
			}
		}
		switch {
		case keys["input_length"] || keys["hash_ids"]:
			if keys["chat_id"] || keys["parent_chat_id"] || keys["turn"] || keys["type"] {
				return Bailian, nil
			}
			return Mooncake, nil
		case keys["prompt"] || keys["messages"]:
			return JSONL, nil
		}
		return "", fmt.Errorf("a JSON object with keys %s is no format this package reads", strings.Join(slices.Sorted(maps.Keys(keys)), ", "))
	}
	names, err := splitCSV(b, nil, maxColumns)
	if err == nil {
		cols := map[string]bool{}
		for _, n := range names {
			cols[strings.ToLower(strings.TrimSpace(string(n)))] = true
		}
		switch {
		case cols["timestamp"] && cols["request tokens"]:
			return BurstGPT, nil
		case cols["timestamp"] && cols["contexttokens"]:
			return Azure, nil
		}
	}
	return "", fmt.Errorf("the first line %s is neither a JSON object nor a BurstGPT or Azure CSV header", quoteLit(b))
}
