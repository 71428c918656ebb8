package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/inferbench/inferbench/benchkit/cli"
)

// sideKeys are the keys a [prefill] or [decode] section may hold.
var sideKeys = []string{"model", "node", "instance_meta", "sharding", "min_nodes", "max_nodes", "skip_pipeline_jaccl", "skip_tensor_ring"}

// fileConfig is a parsed --config file: each top-level key as the flag
// value it stands for, and each section's keys likewise.
type fileConfig struct {
	top   map[string]string // flag name → value
	sides map[string]map[string]string
}

// loadConfig reads a TOML file. Top-level keys must name a flag of fs
// (with "_" for "-"), except config; sections must be [prefill] or
// [decode] with sideKeys. Arrays become comma lists, as the list flags
// take them.
//
// The file is bounded before it is parsed (maxConfigBytes, maxConfigDepth):
// the TOML parser takes time quadratic in the nesting of inline tables and
// dotted keys, so a hostile or corrupt file could otherwise hold the
// program for many minutes, deaf to signals.
func loadConfig(path string, fs *flag.FlagSet) (*fileConfig, error) {
	data, err := readConfig(path)
	if err != nil {
		return nil, err
	}
	var raw map[string]any
	if _, err := decodeTOML(string(data), &raw); err != nil {
		return nil, cli.Usagef("--config %s: %w", path, err)
	}
	fc := &fileConfig{top: map[string]string{}, sides: map[string]map[string]string{}}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := raw[k]
		if k == "prefill" || k == "decode" {
			tbl, ok := v.(map[string]any)
			if !ok {
				return nil, cli.Usagef("--config %s: %s must be a [%s] section, found %T", path, k, k, v)
			}
			side := map[string]string{}
			for sk, sv := range tbl {
				if !slices.Contains(sideKeys, sk) {
					return nil, cli.Usagef("--config %s: unknown key %s.%s; a [%s] section takes %s", path, k, sk, k, strings.Join(sideKeys, ", "))
				}
				s, err := scalar(sv)
				if err != nil {
					return nil, cli.Usagef("--config %s: %s.%s: %v", path, k, sk, err)
				}
				side[sk] = s
			}
			fc.sides[k] = side
			continue
		}
		name := strings.ReplaceAll(k, "_", "-")
		if fs.Lookup(name) == nil || name == "config" {
			return nil, cli.Usagef("--config %s: unknown key %q; top-level keys are the flags' names with _ for - (pp, tg, host, repeat, ...) and the sections [prefill] and [decode]", path, k)
		}
		s, err := scalar(v)
		if err != nil {
			return nil, cli.Usagef("--config %s: %s: %v", path, k, err)
		}
		fc.top[name] = s
	}
	return fc, nil
}

// decodeTOML parses a config file; tests replace it to see that a file
// out of bounds is never parsed.
var decodeTOML = toml.Decode

// Bounds on a --config file, checked before it is parsed. A config is a
// few dozen lines nested two deep ([prefill] model = ...); the bounds are
// far above that and far below what makes the parser slow.
const (
	// maxConfigBytes bounds the file's size.
	maxConfigBytes = 64 << 10
	// maxConfigDepth bounds its nesting: tables, arrays, inline tables
	// and the segments of dotted keys, counted together.
	maxConfigDepth = 10
)

// readConfig reads a --config file, refusing one larger than
// maxConfigBytes or nested deeper than maxConfigDepth without parsing it.
func readConfig(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, cli.Usagef("--config %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, cli.Usagef("--config %s: %w", path, err)
	}
	if len(data) > maxConfigBytes {
		return nil, cli.Usagef("--config %s: larger than %d KiB; a config file is a few dozen lines, so this is not one (not parsed)", path, maxConfigBytes>>10)
	}
	if depth, line := tomlDepth(data, maxConfigDepth); depth > maxConfigDepth {
		return nil, cli.Usagef("--config %s:%d: nested more than %d deep (tables, arrays, inline tables and dotted keys together); a config needs 2 (not parsed)", path, line, maxConfigDepth)
	}
	return data, nil
}

// tomlDepth scans TOML text without parsing it and returns the deepest
// nesting it finds, stopping at the first place deeper than limit, and
// the line of that place. A key's depth is the depth of the table it is
// in plus its dotted segments; an inline table is as deep as the key that
// holds it (or the array it is in), an array one deeper; a [header]'s
// table twice its segments, as each could be an array of tables. Strings
// and comments are skipped. The scan may over-count but never
// under-counts what the parser builds (FuzzTOMLDepth): values are counted
// as key segments, so a float's dot counts like a key's, which is
// harmless.
func tomlDepth(b []byte, limit int) (depth, line int) {
	line = 1
	var stack []int // the depth of each bracket and brace open
	section := 0    // the depth of the current [table]
	inHeader := false
	chain, afterDot, lastSeg := 0, false, false
	value, hasValue := 0, false // after "=": the depth of its key
	lineStart := true
	deepest, deepestLine := 0, 1
	base := func() int {
		switch {
		case len(stack) > 0:
			return stack[len(stack)-1]
		case inHeader:
			return 0
		}
		return section
	}
	note := func(d int) bool {
		if d > deepest {
			deepest, deepestLine = d, line
		}
		return deepest > limit
	}
	segment := func() bool {
		if afterDot {
			chain++
		} else {
			chain = 1
		}
		afterDot, lastSeg = false, true
		return note(base() + chain)
	}
	reset := func() { chain, afterDot, lastSeg, hasValue = 0, false, false, false }
	for i := 0; i < len(b); {
		c := b[i]
		wasLineStart := lineStart
		lineStart = false
		switch {
		case c == '\n':
			line++
			lineStart = true
			reset()
			i++
		case c == ' ' || c == '\t' || c == '\r':
			lineStart = wasLineStart
			i++
		case c == '#':
			for i < len(b) && b[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			n, lines := skipString(b[i:])
			i += n
			if segment() {
				return deepest, deepestLine
			}
			line += lines
		case isBare(c):
			for i < len(b) && isBare(b[i]) {
				i++
			}
			if segment() {
				return deepest, deepestLine
			}
		case c == '.':
			afterDot = lastSeg
			lastSeg = false
			i++
		case c == '[' && len(stack) == 0 && !inHeader && wasLineStart:
			// A [table] or [[array of tables]] header.
			inHeader = true
			if i+1 < len(b) && b[i+1] == '[' {
				i++
			}
			reset()
			i++
		case c == '=':
			value = base() + chain
			reset()
			hasValue = true
			i++
		case c == '[' || c == '{':
			d := base()
			if hasValue {
				d = value
			}
			if c == '[' {
				d++
			}
			stack = append(stack, d)
			reset()
			if note(d) {
				return deepest, deepestLine
			}
			i++
		case c == ']' || c == '}':
			switch {
			case len(stack) > 0:
				stack = stack[:len(stack)-1]
			case inHeader:
				section = 2 * chain
				inHeader = false
				if note(section) {
					return deepest, deepestLine
				}
			}
			reset()
			i++
		default:
			reset()
			i++
		}
	}
	return deepest, deepestLine
}

// isBare reports whether c may be in a bare key (or a number, a date or
// true/false, which the scan takes for keys).
func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// skipString returns the length of the TOML string at the start of b
// (basic or literal, single- or multi-line; the whole rest of b when it is
// not closed) and the newlines inside it.
func skipString(b []byte) (n, lines int) {
	q := b[0]
	delim := []byte{q}
	if len(b) >= 3 && b[1] == q && b[2] == q {
		delim = []byte{q, q, q}
	}
	i := len(delim)
	for i < len(b) {
		switch {
		case q == '"' && b[i] == '\\':
			if i+1 < len(b) && b[i+1] == '\n' {
				lines++
			}
			i += 2
			continue
		case b[i] == '\n':
			lines++
			if len(delim) == 1 {
				return i, lines - 1 // an unclosed one-line string ends here
			}
		case bytes.HasPrefix(b[i:], delim):
			i += len(delim)
			// A multi-line string may end with up to two more quotes.
			for len(delim) == 3 && i < len(b) && b[i] == q {
				i++
			}
			return i, lines
		}
		i++
	}
	return len(b), lines
}

// scalar renders a TOML value as a flag value: arrays as comma lists.
func scalar(v any) (string, error) {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := scalar(e)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	case map[string]any:
		return "", fmt.Errorf("want a value, found a table")
	case string, int64, float64, bool:
		return fmt.Sprint(x), nil
	}
	return "", fmt.Errorf("want a string, number, boolean or array, found %T", v)
}

// apply sets every flag the file names and the command line did not,
// and records which it set.
func (fc *fileConfig) apply(fs *flag.FlagSet, visited, fromFile map[string]bool) error {
	names := make([]string, 0, len(fc.top))
	for n := range fc.top {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if visited[n] {
			continue
		}
		if err := fs.Set(n, fc.top[n]); err != nil {
			return cli.Usagef("--config: %s = %q: %v", strings.ReplaceAll(n, "-", "_"), fc.top[n], err)
		}
		fromFile[n] = true
	}
	return nil
}
