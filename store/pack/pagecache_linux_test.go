package pack

import (
	"os"
	"path/filepath"
	"syscall"
)

// dropPageCache asks the kernel to drop the cached pages of every file in
// dir (posix_fadvise POSIX_FADV_DONTNEED: clean pages only, which fsynced
// packs are).
func dropPageCache(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		return err
	}
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		const fadvDontNeed = 4
		_, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0)
		f.Close()
		if errno != 0 {
			return errno
		}
	}
	return nil
}
