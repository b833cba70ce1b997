//go:build darwin

package folder

import (
	"io/fs"
	"syscall"
)

// sysInfo returns the inode and ctime (ns) of an lstat result.
func sysInfo(fi fs.FileInfo) (uint64, int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return st.Ino, st.Ctimespec.Sec*1e9 + st.Ctimespec.Nsec
}
