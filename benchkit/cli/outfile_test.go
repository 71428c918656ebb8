package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLockOutputsRefusesSecondRun takes a results path for one run and
// asks for it again, as a second run would: the second is refused with an
// error that names the holder (program and process id) and maps to exit
// status 2, and takes nothing; once the first releases, the path is free
// and its lock file gone.
func TestLockOutputsRefusesSecondRun(t *testing.T) {
	dir := t.TempDir()
	out, rows := filepath.Join(dir, "out.json"), filepath.Join(dir, "out.jsonl")
	first, err := LockOutputs("first-bench", out, rows)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.jsonl")
	_, err = LockOutputs("second-bench", other, out)
	if !errors.Is(err, ErrOutputInUse) {
		t.Fatalf("second lock: %v, want ErrOutputInUse", err)
	}
	msg := err.Error()
	for _, want := range []string{out, "first-bench", "pid " + strconv.Itoa(os.Getpid())} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %q", msg, want)
		}
	}
	if got := ExitCode(fmt.Errorf("exo-bench: %w", err)); got != ExitUsage {
		t.Errorf("exit status %d, want %d", got, ExitUsage)
	}
	// The refused run took nothing: other is free.
	l, err := LockOutputs("third-bench", other)
	if err != nil {
		t.Fatalf("a path the refused run asked for is still held: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}
	for _, p := range []string{out, rows, other} {
		if _, err := os.Stat(p + LockSuffix); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("lock file %s left after release: %v", p+LockSuffix, err)
		}
	}
	again, err := LockOutputs("second-bench", out, rows)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again.Release()
}

// TestLockOutputsSamePathTwice gives one file under two spellings: it is
// locked once, not refused by the run itself.
func TestLockOutputsSamePathTwice(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	l, err := LockOutputs("bench", "out.json", filepath.Join(dir, "out.json"), "")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if len(l.held) != 1 {
		t.Errorf("%d locks held for one file", len(l.held))
	}
}

// TestLockOutputsMissingDir is an error that is not "in use".
func TestLockOutputsMissingDir(t *testing.T) {
	_, err := LockOutputs("bench", filepath.Join(t.TempDir(), "no", "such", "out.json"))
	if err == nil || errors.Is(err, ErrOutputInUse) {
		t.Fatalf("lock in a missing directory: %v", err)
	}
}

// TestWriteFileAtomic replaces a results file whole: a write that fails
// half-way leaves the previous file as it was and no temporary file; one
// that succeeds leaves exactly the new bytes, readable by all.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	if err := os.WriteFile(path, []byte("previous\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteFileAtomic(path, func(w io.Writer) error {
		io.WriteString(w, strings.Repeat("x", 1<<16))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failed write: %v, want boom", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "previous\n" {
		t.Errorf("after a failed write the file holds %q, want the previous content", b)
	}
	assertOnly(t, dir, "out.json")
	if err := WriteFileAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new\n" {
		t.Errorf("file holds %q, want %q", b, "new\n")
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v (%v), want 0644", st.Mode().Perm(), err)
	}
	assertOnly(t, dir, "out.json")
}

// TestClearResults removes the previous run's results and the temporary
// files a killed write left, and nothing else.
func TestClearResults(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out[1].json")
	for _, name := range []string{"out[1].json", ".out[1].json.tmp-123", "out[1].jsonl", "other.json", ".other.json.tmp-9"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := ClearResults(path); err != nil {
		t.Fatal(err)
	}
	assertOnly(t, dir, ".other.json.tmp-9", "other.json", "out[1].jsonl")
	if err := ClearResults(path); err != nil {
		t.Errorf("clearing a missing file: %v", err)
	}
}

// assertOnly checks that dir holds exactly names, sorted.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(names, " ") {
		t.Errorf("directory holds %q, want %q", got, names)
	}
}
