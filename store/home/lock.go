package home

import (
	"fmt"

	"github.com/gofrs/flock"
)

// lockFile takes an exclusive lock on the file at p (created if missing),
// waiting for another holder to let go. github.com/gofrs/flock uses
// flock(2) on Linux and macOS and LockFileEx on Windows, so adds to one
// home are kept apart on every OS weft is built for. The lock ends when
// the returned Flock is closed or the process ends.
func lockFile(p string) (*flock.Flock, error) {
	l := flock.New(p, flock.SetPermissions(0o600))
	if err := l.Lock(); err != nil {
		return nil, fmt.Errorf("locking %s: %w", p, err)
	}
	return l, nil
}
