package folder

import (
	"errors"
	"fmt"
	"io/fs"
	"unicode/utf8"
)

// errKeepTemp marks an apply error after which the temp name holds the
// user's item, not the applier's: the caller must not remove it.
var errKeepTemp = errors.New("folder: temp name holds a local item")

// replaceAtomic puts the complete temp item tmp at target without ever
// destroying a local change made after stillSame looked (a plain rename
// would: a user's save landing between the check and the rename is
// overwritten unseen).
//
//   - Nothing was at target (or an empty directory clearDir removed):
//     RenameNoReplace, so an item that appeared since is ErrLocalChange.
//   - Otherwise Exchange: tmp then holds what was at target. If that is
//     the item place looked at (kind, size, mtime, inode and mode; an
//     exchange moves the ctime), it is removed. If not, a local change
//     raced in: the two are exchanged back and the apply fails with
//     ErrLocalChange, the local item untouched under its name.
//
// An error matching errors.ErrUnsupported means the FS cannot do this
// here; the caller falls back to Rename.
//
// Lstat and Remove of the temp name go through ops.
func (a *Applier) replaceAtomic(ar AtomicReplacer, ops nameOps, tmp, target string, cur existing) error {
	if cur.real == "" || cur.info.Kind == KindDir {
		err := ar.RenameNoReplace(tmp, target)
		switch {
		case err == nil, errors.Is(err, errors.ErrUnsupported):
			return err
		case errors.Is(err, fs.ErrExist):
			return fmt.Errorf("%w: %q appeared", ErrLocalChange, target)
		}
		return fmt.Errorf("renaming into %q: %w", target, err)
	}
	if err := ar.Exchange(tmp, target); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %q vanished", ErrLocalChange, target)
	} else if err != nil {
		if errors.Is(err, errors.ErrUnsupported) {
			return err
		}
		return fmt.Errorf("replacing %q: %w", target, err)
	}
	old, err := ops.Lstat(tmp)
	if err == nil && sameReplaced(old, cur.info) {
		if err := ops.Remove(tmp); err != nil {
			// The new item is in place; the old one stays under a temp
			// name, which the next start removes.
			a.cfg.Logger.Warn("removing the replaced item", "path", target, "temp", tmp, "err", err)
		}
		return nil
	}
	if err := ar.Exchange(tmp, target); err != nil {
		return a.keepLocal(ar, tmp, target, "a local change raced an apply and could not be put back", err)
	}
	return fmt.Errorf("%w: %q changed while being replaced", ErrLocalChange, target)
}

// sameReplaced reports whether what an exchange moved out of the target is
// the item that was checked: everything sameStat compares but the ctime,
// which the exchange itself moves.
func sameReplaced(got, want FileInfo) bool {
	return got.Kind == want.Kind && got.Size == want.Size && got.MTime == want.MTime &&
		got.Inode == want.Inode && got.Mode == want.Mode
}

// remove takes away the item at p that Delete checked unchanged (cur),
// without destroying a local change made since (a plain remove would: a
// save landing between the check and the unlink is lost unseen). Where
// the FS is an AtomicReplacer, the item is first renamed to a temp name in
// its directory, which no writer of p can reach any more; if what was
// moved is not the item checked, it goes back under its name and Delete
// fails with ErrLocalChange. Directories are removed directly: rmdir
// refuses a directory that gained an entry. Elsewhere remove falls back
// to a plain Remove.
func (a *Applier) remove(p string, cur existing) error {
	ar, ok := a.cfg.FS.(AtomicReplacer)
	if !ok || cur.info.Kind == KindDir {
		return a.plainRemove(p)
	}
	dir, _ := splitPath(p)
	tmp := joinPath(dir, TempPrefix+randomSuffix())
	switch err := ar.RenameNoReplace(p, tmp); {
	case errors.Is(err, errors.ErrUnsupported):
		return a.plainRemove(p)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %q vanished", ErrLocalChange, p)
	case err != nil:
		return fmt.Errorf("removing %q: moving it aside: %w", p, err)
	}
	old, err := a.cfg.FS.Lstat(tmp)
	if err == nil && sameReplaced(old, cur.info) {
		if err := a.cfg.FS.Remove(tmp); err != nil {
			return fmt.Errorf("removing %q (moved to %q): %w", p, tmp, err)
		}
		return nil
	}
	if err := ar.RenameNoReplace(tmp, p); err != nil {
		return a.keepLocal(ar, tmp, p, "a local change raced a deletion and could not be put back", err)
	}
	return fmt.Errorf("%w: %q changed while being deleted", ErrLocalChange, p)
}

func (a *Applier) plainRemove(p string) error {
	if err := a.cfg.FS.Remove(p); err != nil {
		return fmt.Errorf("removing %q: %w", p, err)
	}
	return nil
}

// move renames from to to for Rename. When to was free (free), an item
// that appeared there since is not replaced where the FS can refuse it
// (RenameNoReplace): ErrLocalChange.
func (a *Applier) move(from, to string, free bool) error {
	if ar, ok := a.cfg.FS.(AtomicReplacer); ok && free {
		err := ar.RenameNoReplace(from, to)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, fs.ErrExist):
			return fmt.Errorf("renaming %q: %w: %q appeared", from, ErrLocalChange, to)
		case !errors.Is(err, errors.ErrUnsupported):
			return fmt.Errorf("renaming %q to %q: %w", from, to, err)
		}
	}
	if err := a.cfg.FS.Rename(from, to); err != nil {
		return fmt.Errorf("renaming %q to %q: %w", from, to, err)
	}
	return nil
}

// keepLocal saves a user's item that a race left under the temp name tmp
// after putting it back at target failed (backErr): it is moved to a
// visible name beside target, KeptName, which the next scan records as a
// new file, because every temp name is removed at the next start as a
// crash's leftover. Only when that move fails too does it stay under the
// temp name (errKeepTemp: the caller leaves it; it is lost at the next
// start unless the user moves it, which the error log says).
func (a *Applier) keepLocal(ar AtomicReplacer, tmp, target, what string, backErr error) error {
	kept := KeptName(target, randomSuffix())
	err := ar.RenameNoReplace(tmp, kept)
	if err == nil {
		dir, _ := splitPath(kept)
		err = a.cfg.FS.SyncDir(dir) // or a power cut could bring back the temp name
	}
	if err != nil {
		a.cfg.Logger.Error(what+"; it is kept under a temporary name, which the next start removes: move it elsewhere",
			"path", target, "temp", tmp, "err", backErr, "keep_err", err)
		return fmt.Errorf("%w: %q: putting the local item back: %w (%w)", ErrLocalChange, target, backErr, errKeepTemp)
	}
	a.cfg.Logger.Error(what+"; it is kept beside it", "path", target, "kept", kept, "err", backErr)
	return fmt.Errorf("%w: %q: putting the local item back: %w; it is kept as %q", ErrLocalChange, target, backErr, kept)
}

// KeptName is the name beside p under which a local item that could not
// be put back at p is kept: the base name's stem, ".local-kept-", a
// random suffix, then the extension (docs/Readme.md ->
// docs/Readme.local-kept-1a2b3c4d5e6f.md). The stem is cut, at a rune
// boundary, so that the name stays within 255 bytes.
func KeptName(p, suffix string) string {
	dir, base := splitPath(p)
	stem, ext := splitExt(base)
	mid := ".local-kept-" + suffix
	if len(ext) > 32 {
		stem, ext = base, ""
	}
	for len(stem)+len(mid)+len(ext) > 255 && stem != "" {
		_, size := utf8.DecodeLastRuneInString(stem)
		stem = stem[:len(stem)-size]
	}
	return joinPath(dir, stem+mid+ext)
}
