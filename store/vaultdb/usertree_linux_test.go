package vaultdb

import (
	"fmt"
	"os"
	"syscall"
)

// inodeCtime returns a file's inode number and change time.
func inodeCtime(fi os.FileInfo) (ino, ctime string) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "?", "?"
	}
	return fmt.Sprint(st.Ino), fmt.Sprintf("%d.%09d", st.Ctim.Sec, st.Ctim.Nsec)
}
