//go:build linux

package folder

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// RenameNoReplace implements AtomicReplacer with renameat2(2)
// RENAME_NOREPLACE.
func (o *OSFS) RenameNoReplace(from, to string) error {
	return o.renameat2("rename", from, to, unix.RENAME_NOREPLACE)
}

// Exchange implements AtomicReplacer with renameat2(2) RENAME_EXCHANGE.
func (o *OSFS) Exchange(a, b string) error {
	return o.renameat2("exchange", a, b, unix.RENAME_EXCHANGE)
}

// renameat2 runs renameat2(2) between the parent directories of from and
// to, each opened through the root (so the kernel refuses an escape) and
// checked like every other path; the names passed are single components.
func (o *OSFS) renameat2(op, from, to string, flags uint) error {
	var dirs [2]*os.File
	var bases [2]string
	for i, p := range []string{from, to} {
		if _, err := o.name(p, false); err != nil {
			return err
		}
		dir, base := splitPath(p)
		n, err := o.dirName(dir)
		if err != nil {
			return err
		}
		d, err := o.r().Open(n)
		if err != nil {
			return err
		}
		defer d.Close()
		dirs[i], bases[i] = d, base
	}
	var fds [2]int
	var conns [2]interface {
		Control(func(uintptr)) error
	}
	for i, d := range dirs {
		rc, err := d.SyscallConn()
		if err != nil {
			return err
		}
		conns[i] = rc
	}
	var serr error
	cerr := conns[0].Control(func(a uintptr) {
		fds[0] = int(a)
		if err := conns[1].Control(func(b uintptr) {
			fds[1] = int(b)
			serr = unix.Renameat2(fds[0], bases[0], fds[1], bases[1], flags)
			for serr == unix.EINTR {
				serr = unix.Renameat2(fds[0], bases[0], fds[1], bases[1], flags)
			}
		}); err != nil {
			serr = err
		}
	})
	if cerr != nil {
		return cerr
	}
	switch {
	case serr == nil:
		return nil
	case errors.Is(serr, unix.EINVAL), errors.Is(serr, unix.ENOSYS), errors.Is(serr, unix.EOPNOTSUPP):
		// A file system (or kernel) without these flags.
		return fmt.Errorf("%s %q: %w (%w)", op, to, errors.ErrUnsupported, serr)
	}
	return &fs.PathError{Op: op, Path: to, Err: serr}
}
