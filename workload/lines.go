package workload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// bufSize is the read buffer of every reader: what it may read ahead of
// the row it returns.
const bufSize = 64 << 10

var bom = []byte{0xEF, 0xBB, 0xBF}

// openBuffered wraps r in a read buffer and drops a leading UTF-8 byte
// order mark.
func openBuffered(r io.Reader) (*bufio.Reader, error) {
	br := bufio.NewReaderSize(r, bufSize)
	head, err := br.Peek(len(bom))
	if bytes.Equal(head, bom) {
		_, _ = br.Discard(len(bom))
		return br, nil
	}
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	return br, nil
}

// lines reads a file line by line, holding at most one line of at most
// MaxLineBytes: a longer line is read past, not kept.
type lines struct {
	r    *bufio.Reader
	name string
	buf  []byte
	n    int // the number of the line last returned

	pending *line // a line given back by unread
}

// unread makes ln, the line last returned, the next line again.
func (l *lines) unread(ln line) { l.pending = &ln }

// A line is one line of a file without its line end ("\n" or "\r\n").
type line struct {
	b       []byte // valid until the next call of next
	n       int    // 1-based number
	noEnd   bool   // the file ended without a line end after it
	tooLong bool   // longer than MaxLineBytes; b is empty
}

// next returns the next line, or io.EOF after the last.
func (l *lines) next() (line, error) {
	if p := l.pending; p != nil {
		l.pending = nil
		return *p, nil
	}
	l.buf = l.buf[:0]
	var ln line
	size := 0
	for {
		chunk, err := l.r.ReadSlice('\n')
		size += len(chunk)
		if err == nil && len(l.buf) == 0 && !ln.tooLong {
			ln.b = chunk // the common case: the whole line in the buffer
		} else if !ln.tooLong {
			if size > MaxLineBytes+2 {
				ln.tooLong, l.buf = true, l.buf[:0]
			} else {
				l.buf = append(l.buf, chunk...)
				ln.b = l.buf
			}
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == io.EOF {
			if size == 0 {
				return line{}, io.EOF
			}
			ln.noEnd = true
			break
		}
		return line{}, fmt.Errorf("%s line %d: read: %w", l.name, l.n+1, err)
	}
	l.n++
	ln.n = l.n
	if ln.tooLong {
		ln.b = nil
		return ln, nil
	}
	b := ln.b
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	if len(b) > MaxLineBytes {
		ln.tooLong, b = true, nil
	}
	ln.b = b
	return ln, nil
}

// record returns the next line that is not blank, an error for a line
// longer than MaxLineBytes, or io.EOF after the last.
func (l *lines) record() (line, error) {
	for {
		ln, err := l.next()
		if err != nil {
			return line{}, err
		}
		if ln.tooLong {
			return line{}, l.bad(ln, faultf(RuleLineLength, "line is longer than %d MiB", MaxLineBytes>>20))
		}
		if !blank(ln.b) {
			return ln, nil
		}
	}
}

// blank reports whether b holds only spaces and tabs.
func blank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}
