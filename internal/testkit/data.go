package testkit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// EnvSharedData names the environment variable that says where the shared
// data folder is, instead of ../shared/data from the repository root.
const EnvSharedData = "INFERBENCH_SHARED_DATA"

// RepoRoot returns the repository root: the nearest directory holding
// go.mod at or above the working directory (a test's working directory is
// its package's). It fails t when there is none.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("testkit: no go.mod in %s or any directory above it", wd)
		}
		dir = parent
	}
}

// SharedDataDir returns the shared data folder: $INFERBENCH_SHARED_DATA
// when set, else ../shared/data from the repository root. It does not
// check that the folder exists.
func SharedDataDir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(EnvSharedData); dir != "" {
		return dir
	}
	return filepath.Join(RepoRoot(t), "..", "shared", "data")
}

// SharedData returns the folder name of the shared data folder (see
// SharedDataDir), or, when it is not there, skips t with a line saying
// where the folder was looked for, how to supply it and, in source, where
// its files come from (fails t under CI=true, where the data is always
// there).
func SharedData(t testing.TB, name, source string) string {
	t.Helper()
	dir := filepath.Join(SharedDataDir(t), name)
	fi, err := os.Stat(dir)
	if err == nil && !fi.IsDir() {
		err = errors.New("not a directory")
	}
	if err != nil {
		abs, _ := filepath.Abs(dir)
		MissingData(t, fmt.Sprintf("shared test data %s is missing (%v): it is kept beside the repository, "+
			"in ../shared/data/%s from its root (CI has it); put the folder there, or set %s to the folder that holds %s/ (%s)",
			abs, err, name, EnvSharedData, name, source))
	}
	return dir
}

// MissingData ends a test whose data is absent: it skips t with msg,
// which should say how to get the data, or fails t with it when the
// environment has CI=true, where missing data is an error of the set-up.
func MissingData(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
