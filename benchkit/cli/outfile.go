package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// ErrOutputInUse is wrapped by the error LockOutputs returns when another
// run holds one of the paths. ExitCode maps it to ExitUsage: the run was
// refused before anything was sent.
var ErrOutputInUse = errors.New("in use by another run")

// An OutputInUseError says which results file another run holds, and who
// holds it, as its lock file records it.
type OutputInUseError struct {
	// Path is the results file asked for.
	Path string
	// Holder describes the run holding it: program, process id, host and
	// start time, or a note when the lock file did not say.
	Holder string
}

func (e *OutputInUseError) Error() string {
	return fmt.Sprintf("%s is %v: %s; wait for it to end or write elsewhere", e.Path, ErrOutputInUse, e.Holder)
}

// Is reports whether target is ErrOutputInUse.
func (e *OutputInUseError) Is(target error) bool { return target == ErrOutputInUse }

// An OutputLock is a run's exclusive hold on its results files, so that
// two runs given the same path refuse to share it rather than interleave
// their rows. Release it when the run's files are written.
type OutputLock struct {
	mu    sync.Mutex
	held  []*heldLock
	freed bool
}

// heldLock is one lock file taken; release undoes it.
type heldLock struct {
	path    string // the lock file
	release func() error
}

// LockSuffix is appended to a results file's path to name its lock file.
const LockSuffix = ".lock"

// LockOutputs takes an exclusive advisory lock on each non-empty path for
// a run of program, through a lock file beside it (path + LockSuffix) that
// records the holder: program, process id, host and start time. When
// another run holds any of them, LockOutputs takes none and returns an
// *OutputInUseError naming that run (errors.Is ErrOutputInUse). The
// directories must exist.
//
// On Linux, macOS and the BSDs the lock is flock(2) on the lock file, so a
// run that dies, even by kill -9, frees it. Elsewhere (Windows) the lock
// file is created exclusively and removed by Release; one left by a run
// that was killed must be removed by hand, as the error then says.
func LockOutputs(program string, paths ...string) (*OutputLock, error) {
	seen := map[string]bool{}
	var files []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("cli: lock %s: %w", p, err)
		}
		if !seen[abs] {
			seen[abs] = true
			files = append(files, abs)
		}
	}
	sort.Strings(files)
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s (pid %d on %s, started %s)", program, os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	l := &OutputLock{}
	for _, abs := range files {
		release, err := lockFile(abs+LockSuffix, holder)
		if err != nil {
			l.Release()
			var busy *OutputInUseError
			if errors.As(err, &busy) {
				busy.Path = displayPath(abs, paths)
				return nil, busy
			}
			return nil, fmt.Errorf("cli: lock %s: %w", displayPath(abs, paths), err)
		}
		l.held = append(l.held, &heldLock{path: abs + LockSuffix, release: release})
	}
	return l, nil
}

// displayPath returns the path as the caller gave it for abs.
func displayPath(abs string, paths []string) string {
	for _, p := range paths {
		if a, err := filepath.Abs(p); err == nil && a == abs {
			return p
		}
	}
	return abs
}

// Release frees every lock and removes the lock files. It is safe to call
// more than once and on a nil lock.
func (l *OutputLock) Release() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.freed {
		return nil
	}
	l.freed = true
	var errs []error
	for i := len(l.held) - 1; i >= 0; i-- {
		errs = append(errs, l.held[i].release())
	}
	return errors.Join(errs...)
}

// readHolder returns what a lock file says about its holder.
func readHolder(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "holder unknown (" + err.Error() + ")"
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 512))
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "holder unknown (the lock was just taken)"
	}
	return s
}

// ClearResults removes the results file at path left by an earlier run,
// and any temporary file an interrupted WriteFileAtomic of it left, so
// that a run that dies before writing its own never leaves an older
// file that looks current beside its new rows. Call it once the path is
// locked (LockOutputs). A missing file is not an error.
func ClearResults(path string) error {
	if path == "" {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cli: remove the previous results %s: %w", path, err)
	}
	temps, _ := filepath.Glob(filepath.Join(filepath.Dir(path), tempPattern(path)))
	for _, t := range temps {
		_ = os.Remove(t)
	}
	return nil
}

// tempPattern is the glob of WriteFileAtomic's temporary files for path.
func tempPattern(path string) string {
	return "." + escapeGlob(filepath.Base(path)) + ".tmp-*"
}

func escapeGlob(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

// WriteFileAtomic writes a results file through a temporary file in the
// same directory, synced and then renamed over path, so that a reader, or
// a crash at any moment, sees either the previous file or the whole new
// one, never a part. write is given a buffered writer; the file is mode
// 0644.
func WriteFileAtomic(path string, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("cli: write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("cli: write %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("cli: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("cli: sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cli: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cli: write %s: %w", path, err)
	}
	syncDir(dir)
	return nil
}
