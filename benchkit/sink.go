package benchkit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// A Sink receives rows as they are measured. The Runner calls Add from one
// goroutine at a time, in the order rows complete.
type Sink interface {
	Add(Row) error
}

// SinkFunc adapts a function to the Sink interface.
type SinkFunc func(Row) error

// Add calls f(r).
func (f SinkFunc) Add(r Row) error { return f(r) }

var (
	_ Sink = SinkFunc(nil)
	_ Sink = (*Collector)(nil)
	_ Sink = (*JSONLSink)(nil)
)

// A Collector keeps every row it receives, for the renderers that need the
// whole run. It is safe for concurrent use.
type Collector struct {
	mu   sync.Mutex
	rows []Row
}

// Add appends r.
func (c *Collector) Add(r Row) error {
	c.mu.Lock()
	c.rows = append(c.rows, r)
	c.mu.Unlock()
	return nil
}

// Rows returns a copy of the rows received so far, in order.
func (c *Collector) Rows() []Row {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Row(nil), c.rows...)
}

// A JSONLSink writes each row as one line of JSON as soon as it arrives,
// so an interrupted sweep keeps every row measured before the interruption.
// When the writer has a Sync method (an *os.File), each line is synced to
// stable storage too.
type JSONLSink struct {
	mu sync.Mutex
	w  io.Writer
}

// NewJSONLSink returns a sink writing to w.
func NewJSONLSink(w io.Writer) *JSONLSink { return &JSONLSink{w: w} }

// Add writes r as one line.
func (s *JSONLSink) Add(r Row) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("benchkit: encode row: %w", err)
	}
	b = append(b, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.w.Write(b); err != nil {
		return fmt.Errorf("benchkit: write JSONL row: %w", err)
	}
	if f, ok := s.w.(interface{ Sync() error }); ok {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("benchkit: sync JSONL file: %w", err)
		}
	}
	return nil
}

// A JSONLReader reads rows back from a JSONL file, shaped like
// bufio.Scanner. A line that does not decode is not fatal: Scan returns it
// as a *LineError record (Row is then the zero Row and LineErr non-nil) and
// reading goes on, so a file cut mid-line by a crash still yields every
// whole row.
type JSONLReader struct {
	sc     *bufio.Scanner
	line   int
	row    Row
	rowErr error
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
		jr.row, jr.rowErr = Row{}, nil
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&jr.row); err != nil {
			jr.row, jr.rowErr = Row{}, &LineError{Line: jr.line, Err: err}
		} else if dec.More() {
			jr.rowErr = &LineError{Line: jr.line, Err: errors.New("more than one JSON value on the line")}
			jr.row = Row{}
		}
		return true
	}
	return false
}

// Row returns the row of the current line.
func (jr *JSONLReader) Row() Row { return jr.row }

// LineErr returns the current line's decoding error, or nil.
func (jr *JSONLReader) LineErr() error { return jr.rowErr }

// Err returns the read error that stopped Scan, or nil at the end of input.
func (jr *JSONLReader) Err() error { return jr.sc.Err() }
