//go:build !unix

package vaultdb

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir opens dir/LOCK. Without flock there is no exclusion here;
// goleveldb's own lock on the index directory still stops a second
// process at the index.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	return f, nil
}
