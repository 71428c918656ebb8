package testkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRepoRootHoldsGoMod(t *testing.T) {
	root := RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.Contains(string(b), "module github.com/inferbench/inferbench\n") {
		t.Errorf("RepoRoot = %s: go.mod %v, want the module's", root, err)
	}
	if wd, _ := os.Getwd(); filepath.Join(root, "internal", "testkit") != wd {
		t.Errorf("RepoRoot = %s, want two levels above %s", root, wd)
	}
}

func TestSharedData(t *testing.T) {
	t.Setenv(EnvSharedData, "")
	if got, want := SharedDataDir(t), filepath.Join(RepoRoot(t), "..", "shared", "data"); got != want {
		t.Errorf("SharedDataDir = %s, want %s", got, want)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "here"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvSharedData, dir)
	if got := SharedData(t, "here", "test"); got != filepath.Join(dir, "here") {
		t.Errorf("SharedData = %s, want %s", got, filepath.Join(dir, "here"))
	}
	t.Setenv("CI", "")
	if msg := run(t, func(tb testing.TB) { SharedData(tb, "absent", "where it comes from") }); !strings.HasPrefix(msg, "skip: ") ||
		!strings.Contains(msg, filepath.Join(dir, "absent")) || !strings.Contains(msg, "where it comes from") || !strings.Contains(msg, EnvSharedData) {
		t.Errorf("an absent folder: %q; want a skip naming the folder, %s and the source", msg, EnvSharedData)
	}
	t.Setenv("CI", "true")
	if msg := run(t, func(tb testing.TB) { SharedData(tb, "absent", "") }); !strings.HasPrefix(msg, "fatal: ") {
		t.Errorf("an absent folder under CI=true: %q; want a failure", msg)
	}
}
