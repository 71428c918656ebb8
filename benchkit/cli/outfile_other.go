//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package cli

import (
	"errors"
	"fmt"
	"os"
)

// lockFile creates the file at path exclusively and writes holder into
// it; release removes it. Without flock(2) a run that is killed leaves the
// file behind, so a later run is refused until someone removes it.
func lockFile(path, holder string) (func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, &OutputInUseError{Holder: readHolder(path) + fmt.Sprintf("; if no such run is alive, remove %s", path)}
	}
	if err != nil {
		return nil, err
	}
	_, _ = f.WriteString(holder + "\n")
	return func() error { return errors.Join(f.Close(), os.Remove(path)) }, nil
}

// syncDir does nothing where directories cannot be opened for syncing.
func syncDir(string) {}
