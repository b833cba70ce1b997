//go:build unix

package pack

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// dirBlocks sums the blocks allocated to the regular files under dir, in
// bytes (st_blocks is in 512-byte units).
func dirBlocks(t testing.TB, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
