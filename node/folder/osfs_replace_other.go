//go:build !linux

package folder

import (
	"errors"
	"fmt"
)

// RenameNoReplace implements AtomicReplacer: not available on this
// platform (errors.ErrUnsupported), so the applier falls back to Rename.
func (o *OSFS) RenameNoReplace(from, to string) error {
	return fmt.Errorf("rename %q without replace: %w", to, errors.ErrUnsupported)
}

// Exchange implements AtomicReplacer: not available on this platform.
func (o *OSFS) Exchange(a, b string) error {
	return fmt.Errorf("exchange %q: %w", b, errors.ErrUnsupported)
}
