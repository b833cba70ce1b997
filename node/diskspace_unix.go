//go:build linux || darwin

package node

import "syscall"

// diskSpace returns the bytes available to this user and the size of the
// file system that holds dir; zeros when unknown.
func diskSpace(dir string) (free, total int64) {
	var s syscall.Statfs_t
	if err := syscall.Statfs(dir, &s); err != nil {
		return 0, 0
	}
	return int64(s.Bavail) * int64(s.Bsize), int64(s.Blocks) * int64(s.Bsize)
}
