package keyfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// maxSize bounds what Load reads: key files are a few hundred bytes.
const maxSize = 64 << 10

// Save writes data to path atomically with permissions 0600: after a crash
// path holds either its old contents or data, never a mix. It creates the
// parent directory with permissions 0700 if missing (existing directories
// are left as they are). It refuses, with ErrSymlink or ErrNotRegular, to
// replace anything but a regular file. A link created at path between that
// check and the final rename is replaced, not followed, so data never lands
// elsewhere. On error the temporary file is removed.
func Save(path string, data []byte) error {
	if err := checkTarget(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("key file %s: creating directory: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("key file %s: creating temporary file: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// CreateTemp already uses 0600; saying it again costs nothing and keeps
	// the contract independent of that detail.
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("key file %s: setting permissions: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("key file %s: writing: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("key file %s: syncing: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("key file %s: closing: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("key file %s: renaming into place: %w", path, err)
	}
	ok = true
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("key file %s: syncing directory: %w", path, err)
	}
	return nil
}

// checkTarget accepts a missing path or a regular file.
func checkTarget(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("key file %s: %w", path, err)
	}
	return checkMode(path, fi)
}

// checkMode accepts a regular file, from an Lstat.
func checkMode(path string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("key file %s: %w; remove the link or point weft at the real file", path, ErrSymlink)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("key file %s: %w (%v)", path, ErrNotRegular, fi.Mode().Type())
	}
	return nil
}

// syncDir makes a rename in dir durable. Windows cannot fsync a directory
// and does not need to.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Load reads the key file at path. It refuses a symlink (ErrSymlink), a
// non-regular file (ErrNotRegular), a file group or others may access
// (ErrInsecurePermissions; the message says to chmod 600 it), a file larger
// than 64 KiB (ErrTooLarge), and a file that changed between its check and
// its opening. A missing file gives an error wrapping fs.ErrNotExist.
func Load(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	if err := checkMode(path, fi); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	defer f.Close()
	// Check the file actually opened, not just the path looked at: a swap
	// between Lstat and Open (to a link, or another file) is refused.
	ofi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	if !os.SameFile(fi, ofi) {
		return nil, fmt.Errorf("key file %s: %w: replaced while being opened", path, ErrSymlink)
	}
	if perm := ofi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("key file %s: %w (permissions %04o); run: chmod 600 %s", path, ErrInsecurePermissions, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("key file %s: reading: %w", path, err)
	}
	if len(data) > maxSize {
		return nil, fmt.Errorf("key file %s: %w (over %d bytes)", path, ErrTooLarge, maxSize)
	}
	return data, nil
}
