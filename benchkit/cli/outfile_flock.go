//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package cli

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on the file at path, creating it, and
// writes holder into it. The kernel frees the lock when the process ends,
// however it ends. Release removes the file while still holding the lock;
// a run that opened the old file meanwhile finds, once it has the lock,
// that the path no longer names that file, and starts over.
func lockFile(path, holder string) (func() error, error) {
	for range 8 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, &OutputInUseError{Holder: readHolder(path)}
			}
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || !os.SameFile(held, now) {
			f.Close() // released by a run that removed it: take the new one
			continue
		}
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt([]byte(holder+"\n"), 0)
		}
		return func() error {
			rmErr := os.Remove(path)
			if errors.Is(rmErr, os.ErrNotExist) {
				rmErr = nil
			}
			return errors.Join(rmErr, f.Close())
		}, nil
	}
	return nil, fmt.Errorf("%s keeps being replaced; another run is taking and releasing it", path)
}

// syncDir syncs a directory, so that a rename in it is on stable storage.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
