//go:build !unix

package home

import (
	"fmt"
	"os"
)

// lockFile opens the file at p. Without flock there is no exclusion here:
// two commands adding vaults to one home at once are not kept apart.
func lockFile(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	return f, nil
}
