package benchkit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/inferbench/inferbench/internal/rowlock"
)

// A Sink receives requests as they are measured: a JSONL file, a progress
// bar, a caller's own. Every driver calls Add from one goroutine at a
// time, in the order the requests complete; a sink that fails stops the
// run (its error wraps ErrSink), since what is measured next could not be
// kept.
type Sink interface {
	Add(Request) error
}

// SinkFunc adapts a function to the Sink interface.
type SinkFunc func(Request) error

// Add calls f(r).
func (f SinkFunc) Add(r Request) error { return f(r) }

// addAll hands r to every sink, stopping at the first that fails.
func addAll(sinks []Sink, r Request) error {
	for _, s := range sinks {
		if err := s.Add(r); err != nil {
			return fmt.Errorf("%w: %w", ErrSink, err)
		}
	}
	return nil
}

var (
	_ Sink = SinkFunc(nil)
	_ Sink = (*Collector)(nil)
	_ Sink = (*JSONLSink)(nil)
)

// A Collector keeps every request it receives, for the views that need
// the whole run. It is safe for concurrent use.
type Collector struct {
	mu   sync.Mutex
	rows []Request
}

// Add appends r.
func (c *Collector) Add(r Request) error {
	c.mu.Lock()
	c.rows = append(c.rows, r)
	c.mu.Unlock()
	return nil
}

// Requests returns a copy of the requests received so far, in order.
func (c *Collector) Requests() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Request(nil), c.rows...)
}

// A JSONLSink writes each request as one line of JSON as soon as it
// arrives, so an interrupted run keeps every request measured before the
// interruption: as its own JSON (a load test's row), or with Exo set as
// exo's row (ExoRun). When the writer has a Sync method (an *os.File),
// each line is synced to stable storage too.
type JSONLSink struct {
	// W receives the lines; Exo writes exo's rows.
	W   io.Writer
	Exo bool
	mu  sync.Mutex
}

// NewJSONLSink returns a sink writing requests' own JSON to w.
func NewJSONLSink(w io.Writer) *JSONLSink { return &JSONLSink{W: w} }

// Add writes r as one line.
func (s *JSONLSink) Add(r Request) error {
	var v any = r
	if s.Exo {
		v = r.Exo()
	}
	return s.write(v)
}

// write writes v as one line, and syncs it when it can.
func (s *JSONLSink) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("benchkit: encode row: %w", err)
	}
	b = append(b, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	defer rowlock.Writing()()
	if _, err := s.W.Write(b); err != nil {
		return fmt.Errorf("benchkit: write JSONL row: %w", err)
	}
	if f, ok := s.W.(interface{ Sync() error }); ok {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("benchkit: sync JSONL file: %w", err)
		}
	}
	return nil
}

// A JSONLReader reads requests back from a JSONL file, in either of their
// JSON shapes (Request.UnmarshalJSON), shaped like bufio.Scanner. A line
// that does not decode is not fatal: Scan returns it as a *LineError
// record (Request is then the zero Request and LineErr non-nil) and
// reading goes on, so a file cut mid-line by a crash still yields every
// whole row. Run header lines (a file that runs append to) are not rows:
// Scan skips them and Header returns the latest.
type JSONLReader struct {
	sc     *bufio.Scanner
	line   int
	row    Request
	rowErr error
	header *RunHeader
}

// A LineError is a line of a JSONL file that did not decode.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("benchkit: JSONL line %d: %v", e.Line, e.Err) }

func (e *LineError) Unwrap() error { return e.Err }

// NewJSONLReader returns a reader of r. Lines may be up to 64 MiB.
func NewJSONLReader(r io.Reader) *JSONLReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	return &JSONLReader{sc: sc}
}

// Scan advances to the next non-blank line and reports whether there is
// one.
func (jr *JSONLReader) Scan() bool {
	for jr.sc.Scan() {
		jr.line++
		b := bytes.TrimSpace(jr.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if h, ok := ParseRunHeader(b); ok {
			jr.header = &h
			continue
		}
		jr.row, jr.rowErr = Request{}, nil
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&jr.row); err != nil {
			jr.row, jr.rowErr = Request{}, &LineError{Line: jr.line, Err: err}
		} else if dec.More() {
			jr.rowErr = &LineError{Line: jr.line, Err: errors.New("more than one JSON value on the line")}
			jr.row = Request{}
		}
		return true
	}
	return false
}

// Header returns the run header read last, the one the current row's run
// began with, or nil when the file has none before it.
func (jr *JSONLReader) Header() *RunHeader { return jr.header }

// Request returns the request of the current line.
func (jr *JSONLReader) Request() Request { return jr.row }

// LineErr returns the current line's decoding error, or nil.
func (jr *JSONLReader) LineErr() error { return jr.rowErr }

// Err returns the read error that stopped Scan, or nil at the end of input.
func (jr *JSONLReader) Err() error { return jr.sc.Err() }

// A RunHeader is the first line a run writes to a JSONL file that it
// appends to (serve-load's --jsonl), so that the rows of successive runs
// in one file can be told apart: the rows after a header, up to the next,
// are that run's. On its line it is the object {"run_header": {...}};
// ParseRunHeader recognises it, and JSONLReader skips it. Readers that
// decode every line as a row must skip it too: it decodes as a zero row.
type RunHeader struct {
	// Program is the program that ran, and PID and Host its process.
	Program string `json:"program"`
	PID     int    `json:"pid"`
	Host    string `json:"host,omitempty"`
	// Started is the run's start, RFC 3339.
	Started string `json:"started"`
	// Provenance, when set, says where the rows come from.
	Provenance *Provenance `json:"provenance,omitempty"`
	// Segment, when the run sent one segment of a split plan, says which,
	// from what shared start, and on what clocks (docs/DISTRIBUTED.md).
	Segment *SegmentHeader `json:"segment,omitempty"`
}

// runHeaderLine is a RunHeader's line.
type runHeaderLine struct {
	RunHeader *RunHeader `json:"run_header"`
}

// ParseRunHeader reports whether line (one line of a JSONL file, without
// its newline) is a run header, and returns it.
func ParseRunHeader(line []byte) (RunHeader, bool) {
	line = bytes.TrimSpace(line)
	if !bytes.HasPrefix(line, []byte("{")) || !bytes.Contains(line, []byte(`"run_header"`)) {
		return RunHeader{}, false
	}
	var h runHeaderLine
	if err := json.Unmarshal(line, &h); err != nil || h.RunHeader == nil {
		return RunHeader{}, false
	}
	return *h.RunHeader, true
}

// AppendJSONL opens the file at path for appending, creating it if need
// be, writes h as the run's first line, and returns a sink of the run's
// requests (their own JSON) to the file, each line synced to stable
// storage as it comes. When the file's last line was cut (a run killed
// mid-write), a newline is written first, so that the cut line stays a
// line of its own and the header stays whole. Close the sink at the end.
func AppendJSONL(path string, h RunHeader) (*JSONLSink, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err != nil {
			f.Close()
			return nil, fmt.Errorf("read the end of %s: %w", path, err)
		}
		if last[0] != '\n' {
			if _, err := f.Write([]byte("\n")); err != nil {
				f.Close()
				return nil, err
			}
		}
	}
	s := NewJSONLSink(f)
	if err := s.write(runHeaderLine{RunHeader: &h}); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the sink's writer when it is an io.Closer (AppendJSONL's
// file).
func (s *JSONLSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.W.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
