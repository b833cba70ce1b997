//go:build unix

package node

import (
	"os"
	"syscall"

	"github.com/weftsync/weft/node/folder"
)

// sameInode reports whether the open root and the directory at the path
// are one directory.
func sameInode(root folder.FileInfo, at os.FileInfo) bool {
	st, ok := at.Sys().(*syscall.Stat_t)
	if !ok || root.Inode == 0 {
		return true
	}
	return root.Inode == uint64(st.Ino)
}
