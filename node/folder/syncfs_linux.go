package folder

import (
	"errors"

	"golang.org/x/sys/unix"
)

// SyncFS makes every completed write and directory change on the file
// system that holds the folder durable, with one syncfs(2). The applier's
// batch path uses it instead of one fsync per file and per directory.
func (o *OSFS) SyncFS() error {
	f, err := o.r().Open(".")
	if err != nil {
		return err
	}
	serr := unix.Syncfs(int(f.Fd()))
	return errors.Join(serr, f.Close())
}
