package graphsnap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/weftsync/weft/store/keyfile"
)

// Write stores s at path through keyfile.Save, the project's atomic
// write (temporary file, synced, renamed, directory synced; 0600; never
// through a symlink): a crash leaves either the old snapshot or the new
// one, never a mix.
func Write(path string, s *Snapshot) error {
	if err := keyfile.Save(path, Encode(s)); err != nil {
		return fmt.Errorf("writing graph snapshot: %w", err)
	}
	return nil
}

// ReadLazy is Read with the versions left to Lazy.Each: only the file's
// bytes and the header are held at once.
func ReadLazy(path string) (*Lazy, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading graph snapshot: %w", err)
	}
	l, err := DecodeLazy(data)
	if err != nil {
		return nil, fmt.Errorf("reading graph snapshot %s: %w", path, err)
	}
	return l, nil
}

// Read loads the snapshot at path. A missing snapshot is (nil, nil): there
// was none to trust, which is not an error.
func Read(path string) (*Snapshot, error) {
	l, err := ReadLazy(path)
	if l == nil || err != nil {
		return nil, err
	}
	s, err := l.whole()
	if err != nil {
		return nil, fmt.Errorf("reading graph snapshot %s: %w", path, err)
	}
	return s, nil
}
