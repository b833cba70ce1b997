package graphsnap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Write stores s at path: written to a temporary file beside it, synced,
// renamed over the old snapshot, and the directory synced, so that a crash
// leaves either the old snapshot or the new one, never a mix.
func Write(path string, s *Snapshot) error {
	data := Encode(s)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("writing graph snapshot: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing graph snapshot: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("writing graph snapshot: %w", err)
	}
	return nil
}

// Read loads the snapshot at path. A missing snapshot is (nil, nil): there
// was none to trust, which is not an error.
func Read(path string) (*Snapshot, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading graph snapshot: %w", err)
	}
	s, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("reading graph snapshot %s: %w", path, err)
	}
	return s, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
