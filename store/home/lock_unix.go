//go:build unix

package home

import (
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on the file at p, waiting for
// another holder to let go. The lock ends when the file is closed or the
// process ends.
func lockFile(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", p, err)
	}
	return f, nil
}
