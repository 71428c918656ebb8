package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/inferbench/inferbench/benchkit"
)

// An Output is a results file named on the command line: the flag that
// named it and its path ("" for none). Append marks a file the run adds
// rows to as it measures (a --jsonl that keeps earlier runs' rows), which
// ClaimOutputs locks but never removes.
type Output struct {
	Flag, Path string
	Append     bool
}

// ClaimOutputs claims a run's results files for program before anything
// is sent: it makes each file's directory, locks every file for the run
// (LockOutputs: a second run given one of them is refused with an
// *OutputInUseError naming this one, exit 2) and removes the previous
// file of each that is not Append (ClearResults), so that a run that dies
// before writing its own never leaves an older one looking current. A
// path that cannot be claimed is a usage error naming its flag. Outputs
// with no path are skipped. Release the lock once the files are written.
func ClaimOutputs(program string, outs ...Output) (*OutputLock, error) {
	var paths []string
	for _, o := range outs {
		if o.Path == "" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(o.Path), 0o755); err != nil {
			return nil, Usagef("--%s: %v", o.Flag, err)
		}
		paths = append(paths, o.Path)
	}
	lock, err := LockOutputs(program, paths...)
	if errors.Is(err, ErrOutputInUse) {
		return nil, err
	}
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	for _, o := range outs {
		if o.Path == "" || o.Append {
			continue
		}
		if err := ClearResults(o.Path); err != nil {
			lock.Release()
			return nil, err
		}
	}
	return lock, nil
}

// WriteResults writes a program's results document to path: doc as
// indented JSON (benchkit.WriteJSON), through a temporary file renamed
// into place (WriteFileAtomic), so that the file is whole or not there.
// Every program writes its --json-out with it.
func WriteResults(path string, doc any) error {
	return WriteFileAtomic(path, func(w io.Writer) error {
		if err := benchkit.WriteJSON(w, doc); err != nil {
			return fmt.Errorf("cli: write %s: %w", path, err)
		}
		return nil
	})
}
