package pack

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks Linux to start writing n bytes of f at off to the
// disk, without waiting for it (sync_file_range with
// SYNC_FILE_RANGE_WRITE). It is only a hint: it makes nothing durable, and
// its failure is ignored (the fsync that follows reports real errors).
// Files that are not *os.File (test file systems) get no hint.
func startWriteback(f File, off, n int64) {
	of, ok := f.(*os.File)
	if !ok {
		return
	}
	rc, err := of.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}
