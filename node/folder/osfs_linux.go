//go:build linux

package folder

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysInfo returns the inode and ctime (ns) of an lstat result.
func sysInfo(fi fs.FileInfo) (uint64, int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return st.Ino, st.Ctim.Sec*1e9 + st.Ctim.Nsec
}

// readDirInfo lists the open directory f and lstats each entry with
// fstatat relative to f's descriptor (one syscall per entry, no
// intermediate os.FileInfo): this is the bulk of a rescan's cost (B9).
// Entries removed between the listing and the lstat are left out.
func readDirInfo(f *os.File) ([]FileInfo, error) {
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	out := make([]FileInfo, 0, len(names))
	var serr error
	cerr := rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		for _, name := range names {
			err := unix.Fstatat(int(fd), name, &st, unix.AT_SYMLINK_NOFOLLOW)
			for err == unix.EINTR {
				err = unix.Fstatat(int(fd), name, &st, unix.AT_SYMLINK_NOFOLLOW)
			}
			if err == unix.ENOENT {
				continue
			} else if err != nil {
				serr = &fs.PathError{Op: "fstatat", Path: name, Err: err}
				return
			}
			out = append(out, statInfo(name, &st))
		}
	})
	if cerr != nil {
		return nil, cerr
	}
	return out, serr
}

func statInfo(name string, st *unix.Stat_t) FileInfo {
	info := FileInfo{
		Name:  name,
		Mode:  fs.FileMode(st.Mode & 0o777),
		MTime: st.Mtim.Sec*1e9 + st.Mtim.Nsec,
		Inode: st.Ino,
		Ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec,
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		info.Kind, info.Size = KindFile, st.Size
	case unix.S_IFDIR:
		info.Kind = KindDir
	case unix.S_IFLNK:
		info.Kind, info.Size = KindSymlink, st.Size
	default:
		info.Kind = KindOther
	}
	return info
}
