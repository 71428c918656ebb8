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
	"time"
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
	rowWrites.RLock()
	defer rowWrites.RUnlock()
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
// whole row. Run header lines (a file that runs append to) are not rows:
// Scan skips them and Header returns the latest.
type JSONLReader struct {
	sc     *bufio.Scanner
	line   int
	row    Row
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

// Header returns the run header read last, the one the current row's run
// began with, or nil when the file has none before it.
func (jr *JSONLReader) Header() *RunHeader { return jr.header }

// Row returns the row of the current line.
func (jr *JSONLReader) Row() Row { return jr.row }

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

// NewRunHeader returns the header of a run of program starting now in
// this process.
func NewRunHeader(program string) RunHeader {
	host, _ := os.Hostname()
	return RunHeader{Program: program, PID: os.Getpid(), Host: host, Started: time.Now().UTC().Format(time.RFC3339Nano)}
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

// A JSONLFile is a results file of one JSON value per line, each written
// and synced to stable storage as it comes, so that a run that is
// interrupted, or killed, keeps every line written until then. It is safe
// for concurrent use.
type JSONLFile struct {
	mu sync.Mutex
	f  *os.File
}

// CreateJSONL creates the file at path, or truncates it.
func CreateJSONL(path string) (*JSONLFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &JSONLFile{f: f}, nil
}

// AppendJSONL opens the file at path for appending, creating it if need
// be, and writes h as the run's first line. When the file's last line was
// cut (a run killed mid-write), a newline is written first, so that the
// cut line stays a line of its own and the header stays whole.
func AppendJSONL(path string, h RunHeader) (*JSONLFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	j := &JSONLFile{f: f}
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
	if err := j.Write(runHeaderLine{RunHeader: &h}); err != nil {
		f.Close()
		return nil, err
	}
	return j, nil
}

// Name returns the file's path.
func (j *JSONLFile) Name() string { return j.f.Name() }

// Write writes v as one line and syncs it.
func (j *JSONLFile) Write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("benchkit: encode a JSONL line: %w", err)
	}
	b = append(b, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	rowWrites.RLock()
	defer rowWrites.RUnlock()
	if _, err := j.f.Write(b); err != nil {
		return fmt.Errorf("benchkit: write %s: %w", j.f.Name(), err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("benchkit: sync %s: %w", j.f.Name(), err)
	}
	return nil
}

// Close closes the file.
func (j *JSONLFile) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.f.Close()
}
