package home

import (
	"path/filepath"
	"testing"

	"github.com/gofrs/flock"
)

// TestLockFileExcludes checks that the vaults lock keeps a second holder
// out while it is held and lets it in once closed. A second open of the
// file is a second holder (flock(2) and LockFileEx lock per open file), so
// this holds within one process as it does between two weft commands.
func TestLockFileExcludes(t *testing.T) {
	p := filepath.Join(t.TempDir(), vaultsLockFile)
	l, err := lockFile(p)
	if err != nil {
		t.Fatal(err)
	}
	other := flock.New(p)
	defer other.Close()
	got, err := other.TryLock()
	if err != nil {
		t.Fatal(err)
	}
	if got {
		t.Fatal("a second holder took the vaults lock while it was held")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, err = other.TryLock()
	if err != nil {
		t.Fatal(err)
	}
	if !got {
		t.Fatal("the vaults lock was not free after its holder closed it")
	}
	if err := other.Unlock(); err != nil {
		t.Fatal(err)
	}
	// A waiting holder gets the lock once the first lets go.
	first, err := lockFile(p)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		second, err := lockFile(p)
		if err == nil {
			err = second.Close()
		}
		done <- err
	}()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
