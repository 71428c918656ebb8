package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// DefaultMaxLineBytes is the longest SSE line (and the most data one event
// may join) an SSEReader accepts unless told otherwise: 1 MiB, far above
// the few hundred bytes of a chat completion chunk.
const DefaultMaxLineBytes = 1 << 20

// SSEOptions configure an SSEReader. The zero value, or a nil pointer, is
// ready to use.
type SSEOptions struct {
	// MaxLineBytes bounds the length of one line, and of one event's data
	// after joining its data lines. A longer line stops the reader with an
	// error of kind KindMalformed wrapping ErrLineTooLong, before it has
	// buffered more than that many bytes. Zero means DefaultMaxLineBytes.
	MaxLineBytes int
	// Now is the clock that stamps each event with the instant its bytes
	// were read. Nil means time.Now, whose readings carry the monotonic
	// clock.
	Now func() time.Time
	// DoneOptional accepts a stream that ends without "data: [DONE]" (for
	// servers that do not send it). By default such a stream is truncated:
	// Err returns an error of kind KindTruncated wrapping ErrNoDone.
	DoneOptional bool
}

// An EventType says what an Event is.
type EventType uint8

// The types of Event an SSEReader returns.
const (
	// EventData is a dispatched event with data (a completion chunk).
	EventData EventType = iota + 1
	// EventComment is one comment line (": keep-alive",
	// ": generation_stats {...}"). Comments are returned as soon as they
	// are read, even between the data lines of an event.
	EventComment
	// EventDone is the closing "data: [DONE]". Next returns false after it
	// without reading further.
	EventDone
	// EventError is an error reported in the stream: an event named
	// "error", or data that is a JSON object whose first key is "error"
	// (with a non-null value) or whose first member is "object": "error".
	// ServerError decodes it.
	EventError
)

// String returns "data", "comment", "done" or "error".
func (t EventType) String() string {
	switch t {
	case EventData:
		return "data"
	case EventComment:
		return "comment"
	case EventDone:
		return "done"
	case EventError:
		return "error"
	}
	return fmt.Sprintf("EventType(%d)", uint8(t))
}

// An Event is one thing read from a stream. Its byte slices point into the
// reader's buffers and are valid only until the next call to Next: copy
// what you keep.
type Event struct {
	// Type is what the event is.
	Type EventType
	// Name is the event's "event:" field, empty for unnamed events (SSE's
	// default "message").
	Name []byte
	// Data is the event's data, its data lines joined with "\n" (one
	// optional space after "data:" removed from each); for a comment, the
	// text after the colon, one optional leading space removed.
	Data []byte
	// At is the instant the bytes completing the event were read: the read
	// that delivered the end of its last data line, or of the comment line.
	// Instants never decrease from one data, done or error event to the
	// next; a comment read between the data lines of an event is returned
	// before that event, so its instant may be the later one.
	At time.Time
}

// Comment splits a comment's text at its first space into a name and a
// payload: ": generation_stats {...}" gives "generation_stats" and "{...}",
// ": keep-alive" gives "keep-alive" and nil.
func (e Event) Comment() (name, payload []byte) {
	if i := bytes.IndexByte(e.Data, ' '); i >= 0 {
		return e.Data[:i], e.Data[i+1:]
	}
	return e.Data, nil
}

// ServerError decodes an EventError's data: the message, type and code of
// a JSON error object in the shapes servers use, or, for data that is not
// one, the data itself as the message.
func (e Event) ServerError() *StreamError {
	if ee, ok := parseErrorObject(e.Data); ok {
		return &ee
	}
	return &StreamError{Message: string(e.Data)}
}

// An SSEReader reads a text/event-stream as the HTML Living Standard
// defines it, with the conventions of OpenAI-style completion streams.
// Use it like bufio.Scanner:
//
//	sr := engine.NewSSEReader(resp.Body, nil)
//	for sr.Next() {
//		ev := sr.Event()
//		...
//	}
//	if err := sr.Err(); err != nil { ... }
//
// Lines end in LF, CRLF or a lone CR; a leading byte order mark is skipped;
// a blank line dispatches the pending event; an "error" field (llama.cpp's
// way of writing an error mid-stream) makes an event named error of its
// value; "id" and "retry" fields and unknown fields are ignored. Next
// returns false after EventDone, at the end of the input and on the first
// error. Err is nil after [DONE]; an input
// that ends without it (or inside an event) gives an *Error of kind
// KindTruncated; a read error gives an *Error of the kind its cause implies
// (KindCanceled, KindTimeout, else KindTruncated); an over-long line an
// *Error of kind KindMalformed. As the standard says, an event cut off by
// the end of the input is not dispatched; the one exception is a final
// "data: [DONE]" whose blank line is missing, which counts as done.
//
// Reading allocates only while the buffers grow to the largest line and
// event seen; steady-state reading allocates nothing per event. The zero
// SSEReader has the default options and no input: Reset gives it one. An
// SSEReader is not safe for concurrent use.
type SSEReader struct {
	r            io.Reader
	max          int
	now          func() time.Time
	doneOptional bool

	buf        []byte    // read buffer; unread bytes are buf[start:end]
	start, end int       // unread window
	readAt     time.Time // instant of the last Read that returned bytes
	rerr       error     // error (io.EOF included) from the last Read
	skipLF     bool      // the last line ended in CR: drop a following LF
	bomDone    bool      // the leading byte order mark was checked
	partial    bool      // the last line was cut by the end of the input

	data     []byte    // pending event's data, each line followed by LF
	hasData  bool      // the pending event has a data field
	dataAt   time.Time // instant of the pending event's last data line
	name     []byte    // pending event's name
	hasName  bool      // the pending event has an event field
	clearing bool      // data and name belong to the event last returned

	ev       Event
	err      error
	finished bool
}

// NewSSEReader returns a reader of the stream r. opts may be nil.
func NewSSEReader(r io.Reader, opts *SSEOptions) *SSEReader {
	sr := &SSEReader{}
	if opts != nil {
		sr.max = opts.MaxLineBytes
		sr.now = opts.Now
		sr.doneOptional = opts.DoneOptional
	}
	if sr.max <= 0 {
		sr.max = DefaultMaxLineBytes
	}
	if sr.now == nil {
		sr.now = time.Now
	}
	sr.Reset(r)
	return sr
}

// Reset makes the reader read r from the start, keeping its options and
// its buffers, so that one SSEReader serves many streams without
// allocating.
func (sr *SSEReader) Reset(r io.Reader) {
	*sr = SSEReader{
		r: r, max: sr.max, now: sr.now, doneOptional: sr.doneOptional,
		buf: sr.buf[:cap(sr.buf)], data: sr.data[:0], name: sr.name[:0],
	}
}

// Event returns the event Next found. Its slices are valid until the next
// call to Next or Reset.
func (sr *SSEReader) Event() Event { return sr.ev }

// Err returns the error that stopped the reader, or nil if it stopped at
// [DONE] (or, with DoneOptional, at a clean end of input).
func (sr *SSEReader) Err() error { return sr.err }

// Next advances to the next event and reports whether there is one.
func (sr *SSEReader) Next() bool {
	if sr.finished {
		return false
	}
	if sr.r == nil {
		return sr.fail(errors.New("engine: SSEReader has no input; create it with NewSSEReader or call Reset"))
	}
	if sr.max <= 0 {
		sr.max = DefaultMaxLineBytes
	}
	if sr.now == nil {
		sr.now = time.Now
	}
	if sr.clearing {
		sr.data, sr.hasData, sr.name, sr.hasName, sr.clearing = sr.data[:0], false, sr.name[:0], false, false
	}
	for {
		line, ok := sr.readLine()
		if !ok {
			return sr.atEnd()
		}
		if len(line) == 0 {
			if sr.dispatch() {
				return true
			}
			continue
		}
		if line[0] == ':' {
			text := line[1:]
			if len(text) > 0 && text[0] == ' ' {
				text = text[1:]
			}
			sr.ev = Event{Type: EventComment, Data: text, At: sr.readAt}
			return true
		}
		field, value := line, line[len(line):]
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) { // no allocation: the compiler compares in place
		case "data":
			if len(sr.data)+len(value)+1 > sr.max {
				return sr.fail(&Error{Kind: KindMalformed, Op: "read SSE stream",
					Err: fmt.Errorf("%w: an event's data exceeds %d bytes (MaxLineBytes)", ErrLineTooLong, sr.max)})
			}
			sr.data = append(sr.data, value...)
			sr.data = append(sr.data, '\n')
			sr.hasData = true
			sr.dataAt = sr.readAt
		case "event":
			sr.name = append(sr.name[:0], value...)
			sr.hasName = true
		case "error":
			// llama.cpp's llama-server writes an error during a stream as
			// a line "error: <json>" (its server_sent_event with the event
			// name as the field), not as an SSE event: read it as an
			// event named error with that data.
			if len(sr.data)+len(value)+1 > sr.max {
				return sr.fail(&Error{Kind: KindMalformed, Op: "read SSE stream",
					Err: fmt.Errorf("%w: an event's data exceeds %d bytes (MaxLineBytes)", ErrLineTooLong, sr.max)})
			}
			sr.name = append(sr.name[:0], "error"...)
			sr.hasName = true
			sr.data = append(sr.data, value...)
			sr.data = append(sr.data, '\n')
			sr.hasData = true
			sr.dataAt = sr.readAt
		}
	}
}

// dispatch turns the pending event into sr.ev at a blank line. It reports
// false when there is nothing to dispatch (no data, and not an error event).
func (sr *SSEReader) dispatch() bool {
	isErrName := sr.hasName && string(sr.name) == "error"
	if !sr.hasData && !isErrName {
		sr.name, sr.hasName = sr.name[:0], false
		return false
	}
	data := sr.data
	if len(data) > 0 {
		data = data[:len(data)-1] // the LF after the last data line
	}
	at := sr.dataAt
	if !sr.hasData {
		at = sr.readAt
	}
	t := EventData
	switch {
	case isErrName:
		t = EventError
	case bytes.Equal(bytes.TrimSpace(data), doneData):
		t = EventDone
		sr.finished = true
	case isErrorPayload(data):
		t = EventError
	}
	var name []byte
	if sr.hasName {
		name = sr.name
	}
	sr.ev = Event{Type: t, Name: name, Data: data, At: at}
	sr.clearing = true
	return true
}

var doneData = []byte("[DONE]")

// atEnd handles the end of the input (or a read error) and returns false,
// or true for a final [DONE] whose blank line is missing.
func (sr *SSEReader) atEnd() bool {
	if sr.err != nil {
		return false
	}
	if sr.rerr != nil && sr.rerr != io.EOF {
		return sr.fail(&Error{Kind: readErrorKind(sr.rerr), Op: "read SSE stream", Err: sr.rerr})
	}
	if sr.hasData && bytes.Equal(bytes.TrimSpace(bytes.TrimSuffix(sr.data, []byte{'\n'})), doneData) {
		var name []byte
		if sr.hasName {
			name = sr.name
		}
		sr.ev = Event{Type: EventDone, Name: name, Data: sr.data[:len(sr.data)-1], At: sr.dataAt}
		sr.finished = true
		return true
	}
	switch {
	case sr.hasData || sr.hasName || sr.partial:
		pending := len(sr.data)
		if sr.hasData {
			pending-- // the LF after the last data line
		}
		return sr.fail(&Error{Kind: KindTruncated, Op: "read SSE stream",
			Err: fmt.Errorf("%w: the input ended inside an event (%d bytes of its data read), want a blank line then [DONE]", ErrNoDone, pending)})
	case sr.doneOptional:
		sr.finished = true
		return false
	}
	return sr.fail(&Error{Kind: KindTruncated, Op: "read SSE stream", Err: ErrNoDone})
}

func (sr *SSEReader) fail(err error) bool {
	sr.err = err
	sr.finished = true
	sr.ev = Event{}
	return false
}

// readLine returns the next line without its terminator; it is valid until
// the next call. ok is false at the end of the input or on an error (sr.err
// set for an over-long line, sr.rerr for a read error).
func (sr *SSEReader) readLine() (line []byte, ok bool) {
	for {
		seg := sr.buf[sr.start:sr.end]
		if sr.skipLF && len(seg) > 0 {
			sr.skipLF = false
			if seg[0] == '\n' {
				sr.start++
				seg = seg[1:]
			}
		}
		if !sr.bomDone && (len(seg) >= 3 || sr.rerr != nil) {
			sr.bomDone = true
			if bytes.HasPrefix(seg, bom) {
				sr.start += 3
				seg = seg[3:]
			}
		}
		if sr.bomDone {
			lf := bytes.IndexByte(seg, '\n')
			head := seg
			if lf >= 0 {
				head = seg[:lf]
			}
			n, adv := -1, 0
			if cr := bytes.IndexByte(head, '\r'); cr >= 0 {
				n, adv = cr, cr+1
				switch {
				case cr+1 < len(seg) && seg[cr+1] == '\n':
					adv++
				case cr+1 == len(seg):
					sr.skipLF = true // an LF may follow in the next read
				}
			} else if lf >= 0 {
				n, adv = lf, lf+1
			}
			if n >= 0 {
				if n > sr.max {
					return nil, sr.tooLong()
				}
				sr.start += adv
				return seg[:n], true
			}
			if len(seg) > sr.max {
				return nil, sr.tooLong()
			}
			if sr.rerr != nil {
				if sr.rerr == io.EOF && len(seg) > 0 {
					// The input ended inside a line: take it as a line, and
					// let atEnd judge what it left pending.
					sr.start = sr.end
					sr.partial = true
					return seg, true
				}
				return nil, false
			}
		} else if sr.rerr != nil {
			return nil, false
		}
		sr.fill()
	}
}

var bom = []byte("\xEF\xBB\xBF")

func (sr *SSEReader) tooLong() bool {
	sr.fail(&Error{Kind: KindMalformed, Op: "read SSE stream",
		Err: fmt.Errorf("%w: a line exceeds %d bytes (MaxLineBytes)", ErrLineTooLong, sr.max)})
	return false
}

// fill reads more input after the unread window, compacting or growing the
// buffer as needed (never beyond what one maximal line needs).
func (sr *SSEReader) fill() {
	if sr.start > 0 {
		sr.end = copy(sr.buf, sr.buf[sr.start:sr.end])
		sr.start = 0
	}
	if sr.end == len(sr.buf) {
		n := 2 * len(sr.buf)
		if n < 4096 {
			n = 4096
		}
		if limit := sr.max + 2; n > limit { // a maximal line and its CRLF
			n = limit
		}
		if n <= len(sr.buf) {
			n = len(sr.buf) + 1
		}
		nb := make([]byte, n)
		copy(nb, sr.buf[:sr.end])
		sr.buf = nb
	}
	for range 100 {
		n, err := sr.r.Read(sr.buf[sr.end:])
		if n > 0 {
			sr.readAt = sr.now()
			sr.end += n
		}
		if err != nil {
			sr.rerr = err
			return
		}
		if n > 0 {
			return
		}
	}
	sr.rerr = io.ErrNoProgress
}

// isErrorPayload reports whether data is a JSON object whose first member
// is "error" with a value other than null, or "object": "error". It looks
// only at the first member, so ordinary chunks cost a few byte compares.
func isErrorPayload(data []byte) bool {
	p := skipSpace(data)
	if len(p) == 0 || p[0] != '{' {
		return false
	}
	p = skipSpace(p[1:])
	var key string
	switch {
	case bytes.HasPrefix(p, []byte(`"error"`)):
		key, p = "error", p[len(`"error"`):]
	case bytes.HasPrefix(p, []byte(`"object"`)):
		key, p = "object", p[len(`"object"`):]
	default:
		return false
	}
	p = skipSpace(p)
	if len(p) == 0 || p[0] != ':' {
		return false
	}
	p = skipSpace(p[1:])
	if key == "object" {
		return bytes.HasPrefix(p, []byte(`"error"`))
	}
	return len(p) > 0 && p[0] != 'n'
}

func skipSpace(p []byte) []byte {
	for len(p) > 0 && (p[0] == ' ' || p[0] == '\t' || p[0] == '\n' || p[0] == '\r') {
		p = p[1:]
	}
	return p
}
