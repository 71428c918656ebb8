//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/internal/testkit"
)

// TestLockFreedWhenHolderKilled locks a results path in a child process,
// checks that this process is refused with the child named, kills the
// child with SIGKILL (no Release runs) and then takes the path: the kernel
// freed the lock, and the stale lock file left behind does not block.
func TestLockFreedWhenHolderKilled(t *testing.T) {
	if p := os.Getenv("BENCHKIT_LOCK_HOLDER"); p != "" {
		if _, err := LockOutputs("holder-child", p); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		select {} // bounded: until the test that started this child kills it
	}
	path := filepath.Join(t.TempDir(), "out.json")
	cmd := testkit.Command(t, testkit.Patience, os.Args[0], "-test.run=^TestLockFreedWhenHolderKilled$")
	cmd.Env = append(os.Environ(), "BENCHKIT_LOCK_HOLDER="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		t.Fatalf("child: %q", line)
	}
	_, err = LockOutputs("parent", path)
	if !errors.Is(err, ErrOutputInUse) || !strings.Contains(err.Error(), "holder-child (pid "+strconv.Itoa(cmd.Process.Pid)) {
		t.Fatalf("while the child holds it: %v; want ErrOutputInUse naming holder-child and its pid", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if _, err := os.Stat(path + LockSuffix); err != nil {
		t.Fatalf("the killed child's lock file should still be there (nothing removed it): %v", err)
	}
	l, err := LockOutputs("parent", path)
	if err != nil {
		t.Fatalf("after the holder was killed: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}
