package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/engine/sim"
)

// TestJSONOutInUseRefused holds --json-out as another run would: the run
// is refused with status 2 naming the holder, the embedded engine is
// never started, and the other run's file is left as it was.
func TestJSONOutInUseRefused(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.json")
	if err := os.WriteFile(out, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	holder, err := cli.LockOutputs("other-prefill-decode", out)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	started := false
	err = runEnv(context.Background(), []string{"--json-out", out}, &bytes.Buffer{}, &bytes.Buffer{},
		env{sim: func(*sim.Options) { started = true }})
	if code := cli.ExitCode(err); code != cli.ExitUsage {
		t.Fatalf("exit %d (%v), want %d", code, err, cli.ExitUsage)
	}
	if !strings.Contains(err.Error(), "other-prefill-decode (pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("error %q does not name the holder", err)
	}
	if started {
		t.Error("the embedded engine was started for a refused run")
	}
	if b, _ := os.ReadFile(out); string(b) != "{}\n" {
		t.Errorf("the other run's results were changed: %q", b)
	}
}

// TestHTMLInUseRefused: --html is claimed like --json-out, even when the
// results go to stdout alone: a page another run holds is refused with
// status 2, the engine never started and the page left as it was.
func TestHTMLInUseRefused(t *testing.T) {
	page := filepath.Join(t.TempDir(), "pd.html")
	if err := os.WriteFile(page, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	holder, err := cli.LockOutputs("other-prefill-decode", page)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	started := false
	err = runEnv(context.Background(), []string{"--stdout", "--html", page}, &bytes.Buffer{}, &bytes.Buffer{},
		env{sim: func(*sim.Options) { started = true }})
	if code := cli.ExitCode(err); code != cli.ExitUsage || !strings.Contains(err.Error(), page) {
		t.Fatalf("exit %d (%v), want %d naming %s", code, err, cli.ExitUsage, page)
	}
	if started {
		t.Error("the embedded engine was started for a refused run")
	}
	if b, _ := os.ReadFile(page); string(b) != "old" {
		t.Errorf("the held page was changed: %q", b)
	}
}
