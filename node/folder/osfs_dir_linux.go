//go:build linux

package folder

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// OpenDir implements DirOpener. The directory is reached through the root
// like every other path (so the kernel refuses an escape) and checked
// like ReadDir's; the descriptor opened is then compared with the lstat,
// so a symlink or another directory swapped in between is refused.
func (o *OSFS) OpenDir(dir string) (Dir, error) {
	n, err := o.dirName(dir)
	if err != nil {
		return nil, err
	}
	fi, err := o.r().Lstat(n)
	if err != nil {
		return nil, err
	}
	f, err := o.r().Open(n)
	if err != nil {
		return nil, err
	}
	got, err := f.Stat()
	if err != nil || !got.IsDir() || !os.SameFile(fi, got) {
		f.Close()
		return nil, fmt.Errorf("%w: directory %q replaced while opening", ErrUnsettled, dir)
	}
	return &osDir{f: f, fd: int(f.Fd()), dir: dir}, nil
}

// osDir is a directory held open by its descriptor; every method is one
// system call relative to it (plus EINTR retries), with no path walk and
// no os.File per created file.
type osDir struct {
	f   *os.File // owns fd
	fd  int
	dir string
}

// checkName refuses anything but a single path component.
func (d *osDir) checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%w: %q is not a name in %q", ErrBadPath, name, d.dir)
	}
	return nil
}

func (d *osDir) pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: joinPath(d.dir, name), Err: err}
}

// Lstat implements Dir.
func (d *osDir) Lstat(name string) (FileInfo, error) {
	if err := d.checkName(name); err != nil {
		return FileInfo{}, err
	}
	var st unix.Stat_t
	err := retry(func() error { return unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	if err != nil {
		return FileInfo{}, d.pathErr("lstat", name, err)
	}
	return statInfo(name, &st), nil
}

// CreateTemp implements Dir.
func (d *osDir) CreateTemp(prefix string) (File, error) {
	for range 10 {
		name := prefix + randomSuffix()
		if err := d.checkName(name); err != nil {
			return nil, err
		}
		var fd int
		err := retry(func() (err error) {
			fd, err = unix.Openat(d.fd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
			return err
		})
		if errors.Is(err, unix.EEXIST) {
			continue
		} else if err != nil {
			return nil, d.pathErr("create", name, err)
		}
		return &rawFile{fd: fd, path: joinPath(d.dir, name)}, nil
	}
	return nil, fmt.Errorf("creating temp file in %q: %w", d.dir, fs.ErrExist)
}

// Remove implements Dir.
func (d *osDir) Remove(name string) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	err := retry(func() error { return unix.Unlinkat(d.fd, name, 0) })
	if errors.Is(err, unix.EISDIR) {
		err = retry(func() error { return unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR) })
	}
	if err != nil {
		return d.pathErr("remove", name, err)
	}
	return nil
}

// Rename implements Dir.
func (d *osDir) Rename(from, to string) error {
	return d.renameat2("rename", from, to, 0)
}

// RenameNoReplace implements Dir with renameat2(2) RENAME_NOREPLACE.
func (d *osDir) RenameNoReplace(from, to string) error {
	return d.renameat2("rename", from, to, unix.RENAME_NOREPLACE)
}

// Exchange implements Dir with renameat2(2) RENAME_EXCHANGE.
func (d *osDir) Exchange(a, b string) error {
	return d.renameat2("exchange", a, b, unix.RENAME_EXCHANGE)
}

func (d *osDir) renameat2(op, from, to string, flags uint) error {
	for _, n := range []string{from, to} {
		if err := d.checkName(n); err != nil {
			return err
		}
	}
	err := retry(func() error { return unix.Renameat2(d.fd, from, d.fd, to, flags) })
	switch {
	case err == nil:
		return nil
	case flags != 0 && (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)):
		// A file system (or kernel) without these flags.
		return fmt.Errorf("%s %q: %w (%w)", op, joinPath(d.dir, to), errors.ErrUnsupported, err)
	}
	return d.pathErr(op, to, err)
}

// Close implements Dir.
func (d *osDir) Close() error { return d.f.Close() }

// retry runs call again while it fails with EINTR.
func retry(call func() error) error {
	err := call()
	for err == unix.EINTR {
		err = call()
	}
	return err
}

// rawFile is a file the applier creates: a bare descriptor, without the
// os.File machinery (poller registration, finalizer) that costs several
// system calls per file.
type rawFile struct {
	fd   int
	path string
}

func (f *rawFile) pathErr(op string, err error) error {
	return &fs.PathError{Op: op, Path: f.path, Err: err}
}

func (f *rawFile) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	err := retry(func() (err error) { n, err = unix.Read(f.fd, b); return err })
	switch {
	case err != nil:
		return 0, f.pathErr("read", err)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (f *rawFile) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		var n int
		err := retry(func() (err error) { n, err = unix.Write(f.fd, b[done:]); return err })
		if err != nil {
			return done, f.pathErr("write", err)
		}
		if n == 0 {
			return done, f.pathErr("write", io.ErrShortWrite)
		}
		done += n
	}
	return done, nil
}

// Close closes the descriptor; a second Close is an error, not a close of
// a descriptor number reused since.
func (f *rawFile) Close() error {
	if f.fd < 0 {
		return f.pathErr("close", fs.ErrClosed)
	}
	err := unix.Close(f.fd)
	f.fd = -1
	if err != nil {
		return f.pathErr("close", err)
	}
	return nil
}

func (f *rawFile) Sync() error {
	if err := retry(func() error { return unix.Fsync(f.fd) }); err != nil {
		return f.pathErr("sync", err)
	}
	return nil
}

func (f *rawFile) Path() string { return f.path }

func (f *rawFile) Stat() (FileInfo, error) {
	var st unix.Stat_t
	if err := retry(func() error { return unix.Fstat(f.fd, &st) }); err != nil {
		return FileInfo{}, f.pathErr("stat", err)
	}
	_, base := splitPath(f.path)
	return statInfo(base, &st), nil
}

// Chmod implements MetaFile with fchmod(2).
func (f *rawFile) Chmod(perm fs.FileMode) error {
	if err := retry(func() error { return unix.Fchmod(f.fd, uint32(perm&fs.ModePerm)) }); err != nil {
		return f.pathErr("chmod", err)
	}
	return nil
}

// Chtimes implements MetaFile with futimens(3) (utimensat(2) on the
// descriptor itself, path NULL), setting the access time too.
func (f *rawFile) Chtimes(mtime int64) error {
	ts := [2]unix.Timespec{unix.NsecToTimespec(mtime), unix.NsecToTimespec(mtime)}
	err := retry(func() error {
		_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(f.fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
		if e != 0 {
			return e
		}
		return nil
	})
	if err != nil {
		return f.pathErr("chtimes", err)
	}
	return nil
}
