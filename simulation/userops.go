package simulation

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/weftsync/weft/node/folder"
)

// The simulated user's replacing operations, each returning the content
// it replaced or removed, taken atomically with the operation itself.
//
// The runner marks that content superseded (the user replaced, deleted or
// renamed onto it). Reading the target first and changing it afterwards
// left a window in which the device's applier could put a newer remote
// version there: the user's operation then replaced that version on disk,
// and the device's scan rightly recorded the user's change as superseding
// it, but the runner had marked the older content and counted the newer
// write as lost (S1 at 10 devices, seed 3, write 192.0 at f1.txt:
// docs/simulation.md, finding 7). The target is now swapped atomically
// (MemFS Exchange) with a file in weft's work directory, which the scanner
// ignores, and what was swapped out is read there.

// userWriteFile replaces (or creates) p with content and returns what p held
// (nil, false when it held no regular file).
func userWriteFile(fsys *folder.MemFS, p string, content []byte) ([]byte, bool, error) {
	tmp, err := stageFile(fsys, p, content)
	if err != nil {
		return nil, false, err
	}
	old, had, err := swapIn(fsys, tmp, p)
	if err != nil {
		_ = fsys.Remove(tmp)
		return nil, false, fmt.Errorf("writing %s: %w", p, err)
	}
	return old, had, fsys.SyncDir(parentOf(p))
}

// userRemoveFile deletes p and returns what it held.
func userRemoveFile(fsys *folder.MemFS, p string) ([]byte, bool, error) {
	aside, err := moveAside(fsys, p)
	if err != nil {
		return nil, false, err
	}
	old, had := readFile(fsys, aside)
	if err := fsys.Remove(aside); err != nil {
		return nil, false, err
	}
	return old, had, fsys.SyncDir(parentOf(p))
}

// userRenameFile moves the file from onto to and returns what to held.
func userRenameFile(fsys *folder.MemFS, from, to string) ([]byte, bool, error) {
	if err := mkdirs(fsys, parentOf(to)); err != nil {
		return nil, false, err
	}
	aside, err := moveAside(fsys, from)
	if err != nil {
		return nil, false, err
	}
	old, had, err := swapIn(fsys, aside, to)
	if err != nil {
		// Put it back where the user had it: the rename did not happen.
		if rerr := fsys.Rename(aside, from); rerr != nil {
			return nil, false, errors.Join(err, rerr)
		}
		return nil, false, err
	}
	if err := fsys.SyncDir(parentOf(from)); err != nil {
		return nil, false, err
	}
	return old, had, fsys.SyncDir(parentOf(to))
}

// swapIn moves src (in the work directory) to p. If p exists, the two are
// exchanged atomically and what p held is read from src and removed. A
// directory at p is left alone (an error, as a rename over it would be).
func swapIn(fsys *folder.MemFS, src, p string) ([]byte, bool, error) {
	for range 3 {
		err := fsys.RenameNoReplace(src, p)
		if err == nil {
			return nil, false, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, false, err
		}
		err = fsys.Exchange(src, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed in between: create it
		}
		if err != nil {
			return nil, false, err
		}
		old, had := readFile(fsys, src)
		if err := fsys.Remove(src); err != nil {
			return nil, false, err
		}
		return old, had, nil
	}
	return nil, false, fmt.Errorf("replacing %s: it kept changing", p)
}

// moveAside renames p into the work directory (one atomic step) and
// returns its new path there.
func moveAside(fsys *folder.MemFS, p string) (string, error) {
	if err := mkdirs(fsys, folder.WorkDir); err != nil {
		return "", err
	}
	f, err := fsys.CreateTemp(folder.WorkDir, "sim-aside-")
	if err != nil {
		return "", err
	}
	aside := f.Path()
	if err := f.Close(); err != nil {
		return "", err
	}
	if err := fsys.Rename(p, aside); err != nil {
		_ = fsys.Remove(aside)
		return "", err
	}
	return aside, nil
}
