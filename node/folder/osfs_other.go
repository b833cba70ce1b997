//go:build !linux && !darwin

package folder

import "io/fs"

// sysInfo returns 0, 0: this platform's lstat has no inode or ctime that
// the package reads, so change detection relies on size, mtime and mode.
func sysInfo(fs.FileInfo) (uint64, int64) { return 0, 0 }
