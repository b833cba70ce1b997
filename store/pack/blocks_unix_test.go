//go:build unix

package pack

import (
	"os"
	"syscall"
)

// allocated is the space the file system allocated to fi, in bytes
// (st_blocks is in 512-byte units).
func allocated(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
