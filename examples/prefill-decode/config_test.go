package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/inferbench/inferbench/benchkit/cli"
)

// TestConfigOutOfBoundsNotParsed gives --config files that would hold the
// TOML parser for minutes (100k nested inline tables, 600 KB, take about
// 30 min; thousands of dotted key segments, tens of seconds): each exits
// with status 2 and a message saying which bound it broke, and the parser
// is never called. A file just inside the bounds is parsed.
func TestConfigOutOfBoundsNotParsed(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const n = 100_000
	cases := []struct {
		path, want string
	}{
		{write("huge.toml", "x = "+strings.Repeat("{a=", n)+"1"+strings.Repeat("}", n)+"\n"), "larger than 64 KiB"},
		{write("padded.toml", "repeat = 2\n"+strings.Repeat("# padding\n", maxConfigBytes/10+1)), "larger than 64 KiB"},
		{write("inline.toml", "repeat = 2\nx = "+strings.Repeat("{a=", 4000)+"1"+strings.Repeat("}", 4000)+"\n"), "inline.toml:2: nested more than 10 deep"},
		{write("dotted.toml", strings.Repeat("a.", 8000)+"a = 1\n"), "nested more than 10 deep"},
		{write("arrays.toml", "pp = "+strings.Repeat("[", 11)+strings.Repeat("]", 11)+"\n"), "nested more than 10 deep"},
		{write("header.toml", "["+strings.Repeat("prefill.", 3)+"x]\n"+strings.Repeat("k.", 2)+"k = 1\n"), "header.toml:2: nested more than 10 deep"},
	}
	parsed := 0
	decodeTOML = func(data string, v any) (toml.MetaData, error) {
		parsed++
		return toml.Decode(data, v)
	}
	defer func() { decodeTOML = toml.Decode }()
	for _, tc := range cases {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"--config", tc.path}, &stdout, &stderr)
			if code := cli.ExitCode(err); code != cli.ExitUsage {
				t.Fatalf("exit %d (%v), want %d", code, err, cli.ExitUsage)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "not parsed") {
				t.Errorf("error %q, want one saying %q and that the file was not parsed", err, tc.want)
			}
			if parsed != 0 {
				t.Errorf("the parser ran %d times on a file out of bounds", parsed)
			}
		})
	}
	// Inside the bounds: parsed, and the config's own checks apply.
	inside := write("inside.toml", "pp = [[[2048]]]\n[prefill]\nnode = \"a\"\n")
	_, err := parse([]string{"--config", inside}, &bytes.Buffer{})
	if parsed != 1 {
		t.Errorf("a file inside the bounds was parsed %d times, want 1 (err %v)", parsed, err)
	}
}

// TestTOMLDepth checks the scan on the shapes a config takes and on the
// places it must not count: strings, comments and multi-line strings.
func TestTOMLDepth(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{"", 0},
		{"repeat = 2\n", 1},
		{"pp = [2048, 4096]\n", 3},
		{"[prefill]\nnode = \"a\"\n", 3},
		{"prefill.node = \"a\"\n", 2},
		{"x = {a = {b = 1}}\n", 3},
		{"x = {a.b = {c = 1}}\n", 4},
		{"x = [{a = 1}]\n", 3},
		{"[a.b]\nc.d = 1\n", 6},
		{"x = \"{{{{[[[[a.b.c.d.e\"\n", 1},
		{"x = '{{{{[[[['\n", 1},
		{"# {{{{[[[[ a.b.c.d.e\nx = 1\n", 1},
		{"x = \"\"\"\n{{{{[[[[\n\\\"\"\"\"\"\n", 1},
		{"x = '''\n{{{{\n'''\n", 1},
		{"[[runs]]\nk = 1\n", 3},
		{"a.b.c = 1.5\n", 3},
		{"\"a.b\".c = 1\n", 2},
		{"x = [\n  [1],\n]\n", 4},
	} {
		if got, _ := tomlDepth([]byte(tc.src), 1<<30); got != tc.want {
			t.Errorf("tomlDepth(%q) = %d, want %d", tc.src, got, tc.want)
		}
	}
	// The scan stops at the first place past the limit and says its line.
	src := "a = 1\nb = [[[[[1]]]]]\n" + strings.Repeat("c = 1\n", 1000)
	if got, line := tomlDepth([]byte(src), 3); got != 4 || line != 2 {
		t.Errorf("past the limit: depth %d at line %d, want 4 at line 2", got, line)
	}
}

// nesting returns how deep containers (tables and arrays) nest in a
// decoded TOML value, the top-level table not counted.
func nesting(v any) int {
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			d = max(d, 1+nesting(e))
		}
	case []map[string]any:
		for _, e := range x {
			d = max(d, 1+nesting(e))
		}
	case []any:
		for _, e := range x {
			d = max(d, 1+nesting(e))
		}
	}
	return d
}

// FuzzTOMLDepth scans arbitrary text as a --config file: the scan never
// panics, and for text the parser accepts it never finds less nesting
// than the parser builds, so a file within the bound cannot nest deeper
// than it.
func FuzzTOMLDepth(f *testing.F) {
	for _, s := range []string{
		"repeat = 2\n", "pp = [1, [2, [3]]]\n", "[a.b]\nc.d = {e = [1]}\n", "[[a.b]]\n[a.b.c]\nd = 1\n",
		"x = \"\"\"a\\\n{\"\"\"\n", "'a.b'.c = '''x'''\n", "x = {a.b = {c = 1}}\n", "a = 1 # {[\n",
		"  [ a . b ]\n c = 1\n", "x = [\n  [1],\n]\n", "\"a\\\"b\".c = 1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		depth, line := tomlDepth(data, maxConfigDepth)
		if line < 1 || line > bytes.Count(data, []byte("\n"))+1 {
			t.Fatalf("line %d outside the text", line)
		}
		if depth > maxConfigDepth || len(data) > 4096 {
			return // not parsed by the program; the parser may be slow on it
		}
		var v map[string]any
		if _, err := toml.Decode(string(data), &v); err != nil {
			return
		}
		full, _ := tomlDepth(data, 1<<30)
		if n := nesting(v); full < n {
			t.Fatalf("scan found depth %d, the parser built %d:\n%s", full, n, data)
		}
	})
}
