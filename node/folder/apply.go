package folder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"slices"
	"strings"
)

// ApplierConfig configures an Applier.
type ApplierConfig struct {
	FS    FS    // required
	Index Index // required: the records the local-change checks compare with
	// Folding is how FS compares names (see Probe).
	Folding Folding
	// Logger; default slog.Default().
	Logger *slog.Logger
	// TestOnlyBeforeRename, if set, runs after a temporary file or link is
	// complete and durable and before it is renamed over its target; an
	// error aborts the apply there, as a crash would (the temp file stays).
	TestOnlyBeforeRename func(tmp, target string) error
	// TestOnlyBeforeRemove, if set, runs in Delete after the item was
	// checked unchanged and before it is taken away.
	TestOnlyBeforeRemove func(p string)
	// TestOnlyAfterRename, if set, runs after a written file or link was
	// renamed onto its name and before the applier looks at it there.
	TestOnlyAfterRename func(target string)
}

// Applier writes versions that arrived from peers into the folder. Every
// change is durable before it returns: file content goes to a temporary
// file in the target's directory, is fsynced, gets its mode and mtime, is
// renamed over the target, and the directory is fsynced. A partially
// written file is never visible under its final name.
//
// Before replacing or deleting anything it lstats it and compares with the
// caller's Index record; if the item is unknown to the index or changed
// since (size, mtime, inode, ctime, mode, kind), it returns ErrLocalChange
// and touches nothing: the caller rescans and treats it as a conflict.
// Where the FS is an AtomicReplacer, the final rename cannot destroy a
// change made after that check either (see replaceAtomic); an apply that
// fails or loses such a race removes its temp file before returning.
//
// Ordering obligation: within one batch of versions, apply deletions
// before writes (and a directory's children before the directory when
// deleting, parents before children when creating). On a folding file
// system this is what turns a case-only rename arriving as "delete
// Readme.md, add README.md" into a rename rather than a collision; Rename
// does it without re-writing content.
//
// An Applier is safe for concurrent use on different paths; callers must
// not apply two versions of one path at once.
type Applier struct {
	cfg ApplierConfig
}

// NewApplier returns an Applier.
func NewApplier(cfg ApplierConfig) (*Applier, error) {
	if cfg.FS == nil || cfg.Index == nil {
		return nil, errors.New("folder: applier config needs FS and Index")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Applier{cfg: cfg}, nil
}

// Outcome says what an apply did.
type Outcome struct {
	// Path is where the item now is: the requested path, or its
	// CollisionName when it collided with another live path and lost.
	Path string
	// Info is the item's lstat after the apply; RecordOf(Path, Info) plus
	// the content hash is what the caller records, so the next scan skips
	// it.
	Info FileInfo
	// Collision is the existing path that the requested one collided with
	// on a folding file system ("" if none).
	Collision string
	// MovedAside is where the colliding item was moved when the requested
	// path won the name ("" if nothing moved).
	MovedAside string
}

// FileVersion is a file to write.
type FileVersion struct {
	Path       string
	Size       int64 // exact number of bytes the content yields
	MTime      int64 // ns since the epoch
	Executable bool
}

// existing is what a path resolves to on disk.
type existing struct {
	real string // the path under its on-disk name ("" if nothing there)
	info FileInfo
}

// resolve lstats p and, on a folding FS, finds the on-disk name of what
// answered.
func (a *Applier) resolve(p string) (existing, error) { return a.resolveWith(a.cfg.FS, p) }

// resolveWith is resolve with the lstat done through ops.
func (a *Applier) resolveWith(ops nameOps, p string) (existing, error) {
	info, err := ops.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return existing{}, nil
	} else if err != nil {
		return existing{}, err
	}
	dir, base := splitPath(p)
	if !a.cfg.Folding.Folds() {
		return existing{real: p, info: info}, nil
	}
	// On a folding file system the item found may be stored under another
	// name, and neither Lstat (the operating system's reports the name
	// asked for) nor the inode (a case-only rename keeps it) says so: the
	// directory listing has the stored one. This costs one listing of the
	// directory per item replaced or deleted there, on such file systems
	// only; a new item (Lstat finds nothing) costs none.
	ents, err := a.cfg.FS.ReadDir(dir)
	if err != nil {
		return existing{}, err
	}
	key := a.cfg.Folding.Key(base)
	for _, e := range ents {
		if a.cfg.Folding.Key(e.Name) == key {
			name := e.Name
			if a.cfg.Folding.NormInsensitive && !a.cfg.Folding.CaseInsensitive && name != base {
				name = base // only the normalisation differs: same wire path
			}
			return existing{real: joinPath(dir, name), info: e}, nil
		}
	}
	return existing{real: p, info: info}, nil
}

// unchanged checks that what is at e.real is what the index recorded.
func (a *Applier) unchanged(e existing) error {
	rec, ok := a.cfg.Index.Lookup(e.real)
	if !ok {
		return fmt.Errorf("%w: %q is not in the index", ErrLocalChange, e.real)
	}
	if !sameMeta(rec, e.info) {
		return fmt.Errorf("%w: %q", ErrLocalChange, e.real)
	}
	return nil
}

// mkdirs creates the parents of p as needed, fsyncing each new entry.
func (a *Applier) mkdirs(p string) error {
	dir, _ := splitPath(p)
	return a.makeDirs(dir)
}

// makeDirs creates dir and its parents as needed, fsyncing each new entry,
// and checks that each is a directory.
func (a *Applier) makeDirs(dir string) error {
	if dir == "" {
		return nil
	}
	for i := 0; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		d := dir[:i]
		info, err := a.cfg.FS.Lstat(d)
		if err == nil {
			if info.Kind != KindDir {
				return fmt.Errorf("%w: %q", ErrParentNotDir, d)
			}
			continue
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := a.cfg.FS.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating directory %q: %w", d, err)
		}
		parent, _ := splitPath(d)
		if err := a.cfg.FS.SyncDir(parent); err != nil {
			return fmt.Errorf("syncing directory %q: %w", parent, err)
		}
	}
	return nil
}

// place decides where a new item for p goes, handling an existing item:
// it returns the target path and fills out.Collision / out.MovedAside.
// Its lstats go through ops.
func (a *Applier) place(ops nameOps, p string, out *Outcome) (target string, cur existing, err error) {
	cur, err = a.resolveWith(ops, p)
	if err != nil || cur.real == "" {
		return p, cur, err
	}
	if cur.real == p {
		return p, cur, a.unchanged(cur)
	}
	// A different live name takes this name's place on a folding FS.
	out.Collision = cur.real
	if err := a.unchanged(cur); err != nil {
		return "", cur, err
	}
	if p < cur.real {
		aside, err := a.freeName(cur.real)
		if err != nil {
			return "", cur, err
		}
		if err := a.cfg.FS.Rename(cur.real, aside); err != nil {
			return "", cur, fmt.Errorf("moving %q aside: %w", cur.real, err)
		}
		dir, _ := splitPath(p)
		if err := a.cfg.FS.SyncDir(dir); err != nil {
			return "", cur, fmt.Errorf("syncing directory %q: %w", dir, err)
		}
		out.MovedAside = aside
		a.cfg.Logger.Warn("name collision: existing item moved aside", "path", p, "existing", cur.real, "aside", aside)
		return p, existing{}, nil
	}
	// p loses: it goes to its collision name, replacing an indexed,
	// unchanged item there (an earlier version of the same collision).
	for n := 1; ; n++ {
		alt := CollisionName(p, n)
		e, err := a.resolveWith(ops, alt)
		if err != nil {
			return "", cur, err
		}
		if e.real == "" || (e.real == alt && a.unchanged(e) == nil) {
			a.cfg.Logger.Warn("name collision: written under collision name", "path", p, "existing", cur.real, "as", alt)
			return alt, e, nil
		}
	}
}

// freeName returns the first CollisionName of p that nothing occupies.
func (a *Applier) freeName(p string) (string, error) {
	for n := 1; ; n++ {
		alt := CollisionName(p, n)
		e, err := a.resolve(alt)
		if err != nil {
			return "", err
		}
		if e.real == "" {
			return alt, nil
		}
	}
}

// clearDir makes room at target when it holds an (indexed, unchanged)
// directory: the directory must be empty and is removed.
func (a *Applier) clearDir(target string, cur existing) error {
	if cur.real == "" || cur.info.Kind != KindDir {
		return nil
	}
	if err := a.emptyDir(target); err != nil {
		return err
	}
	if err := a.cfg.FS.Remove(target); err != nil {
		return fmt.Errorf("removing directory %q: %w", target, err)
	}
	return nil
}

// emptyDir removes leftover temp files in dir and fails with
// DirNotEmptyError if anything else remains.
func (a *Applier) emptyDir(dir string) error {
	ents, err := a.cfg.FS.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("listing directory %q: %w", dir, err)
	}
	var left []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name, TempPrefix) && e.Kind != KindDir {
			if err := a.cfg.FS.Remove(joinPath(dir, e.Name)); err == nil {
				continue
			}
		}
		left = append(left, e.Name)
	}
	if len(left) > 0 {
		return &DirNotEmptyError{Path: dir, Entries: left}
	}
	return nil
}

// stillSame re-checks, just before the rename, that target is as it was
// when place looked at it.
func (a *Applier) stillSame(ops nameOps, target string, cur existing) error {
	info, err := ops.Lstat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if cur.real == "" || cur.info.Kind == KindDir {
			return nil
		}
		return fmt.Errorf("%w: %q vanished", ErrLocalChange, target)
	case err != nil:
		return err
	case cur.real == "":
		return fmt.Errorf("%w: %q appeared", ErrLocalChange, target)
	case !sameStat(info, cur.info) || info.Mode != cur.info.Mode:
		return fmt.Errorf("%w: %q", ErrLocalChange, target)
	}
	return nil
}

// WriteFile writes one file version from content, which must yield
// exactly v.Size bytes (ErrSizeMismatch otherwise, and nothing changes).
// It replaces an indexed, unchanged file, symlink or empty directory at
// v.Path; anything else there is ErrLocalChange. The permission bits of a
// replaced file are kept except the executable bits, which follow
// v.Executable; a new file gets 0644 or 0755.
func (a *Applier) WriteFile(ctx context.Context, v FileVersion, content io.Reader) (Outcome, error) {
	var out Outcome
	ds := a.newDirSet()
	defer ds.close()
	p, err := a.prepare(ctx, ds, FileWrite{Version: v, Content: content}, &out)
	if err != nil {
		return out, err
	}
	ok := false
	defer func() {
		if !ok {
			p.f.Close()
			ds.Remove(p.tmp)
		}
	}()
	if err := p.f.Sync(); err != nil {
		return out, fmt.Errorf("syncing %q: %w", p.target, err)
	}
	if err := p.f.Close(); err != nil {
		return out, fmt.Errorf("closing %q: %w", p.target, err)
	}
	if err := a.commit(ds, p.tmp, p.target, p.cur); err != nil {
		if errors.Is(err, errAborted) || errors.Is(err, errKeepTemp) {
			ok = true // leave the temp file: as a crash would, or it is the user's
		}
		return out, err
	}
	ok = true
	out.Info, err = a.landed(ds, p.target, p.put)
	return out, err
}

var errAborted = errors.New("folder: aborted by test hook")

// landed returns what to index for the item the applier just renamed onto
// name, put being that item's own stat from before the rename: the name's
// lstat, which carries the ctime the rename gave it, while the name still
// holds that item (kind, inode, size, mtime and mode); otherwise put with a
// ctime no lstat gives (noCtime), so the next scan hashes whatever is
// there. A save or deletion landing between the rename and the lstat would
// otherwise be indexed as the applied version: every later scan would take
// the user's file for unchanged and never record it, and the next apply
// at the path would replace it unseen (docs/simulation.md, finding 11).
func (a *Applier) landed(ops nameOps, name string, put FileInfo) (FileInfo, error) {
	if h := a.cfg.TestOnlyAfterRename; h != nil {
		h(name)
	}
	info, err := ops.Lstat(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return info, fmt.Errorf("looking at %q after applying it: %w", name, err)
	}
	if err == nil && info.Kind == put.Kind && info.Inode == put.Inode && info.Size == put.Size && info.MTime == put.MTime && info.Mode == put.Mode {
		return info, nil
	}
	a.cfg.Logger.Info("a local change replaced an applied item at once; the next scan records it", "path", name)
	_, put.Name = splitPath(name)
	put.Ctime = noCtime
	return put, nil
}

// noCtime is a ctime no file system reports (those without one report 0).
const noCtime = -1

// commit renames a complete, durable temp item over target and fsyncs the
// directory.
func (a *Applier) commit(ops nameOps, tmp, target string, cur existing) error {
	if err := a.rename(ops, tmp, target, cur); err != nil {
		return err
	}
	dir, _ := splitPath(target)
	if err := a.cfg.FS.SyncDir(dir); err != nil {
		return fmt.Errorf("syncing directory %q: %w", dir, err)
	}
	return nil
}

// WriteSymlink makes p a symlink to target (never resolved), replacing an
// indexed, unchanged item the way WriteFile does: the link is created
// under a temp name and renamed over p.
func (a *Applier) WriteSymlink(ctx context.Context, p, target string) (Outcome, error) {
	out := Outcome{Path: p}
	if err := ValidPath(p); err != nil {
		return out, err
	}
	if target == "" || strings.IndexByte(target, 0) >= 0 {
		return out, fmt.Errorf("%w: symlink target %q", ErrBadPath, target)
	}
	if err := a.mkdirs(p); err != nil {
		return out, err
	}
	dst, cur, err := a.place(a.cfg.FS, p, &out)
	if err != nil {
		return out, err
	}
	out.Path = dst
	dir, _ := splitPath(dst)
	tmp := joinPath(dir, TempPrefix+randomSuffix())
	if err := a.cfg.FS.Symlink(target, tmp); err != nil {
		return out, fmt.Errorf("creating symlink for %q: %w", dst, err)
	}
	put, err := a.cfg.FS.Lstat(tmp)
	if err != nil {
		a.cfg.FS.Remove(tmp)
		return out, fmt.Errorf("creating symlink for %q: %w", dst, err)
	}
	if err := a.commit(a.cfg.FS, tmp, dst, cur); err != nil {
		if !errors.Is(err, errAborted) && !errors.Is(err, errKeepTemp) {
			a.cfg.FS.Remove(tmp)
		}
		return out, err
	}
	out.Info, err = a.landed(a.cfg.FS, dst, put)
	return out, err
}

// MakeDir makes p a directory (parents as needed) with permission perm (0
// means 0755). An existing directory is kept (its mode set to perm when
// perm is not 0); an indexed, unchanged file or symlink there is replaced.
// On a folding FS an existing directory whose name differs only by
// folding is used as is (Outcome.Collision names it): the children of both
// meet in it and collide, if at all, one by one.
func (a *Applier) MakeDir(ctx context.Context, p string, perm fs.FileMode) (Outcome, error) {
	out := Outcome{Path: p}
	if err := ValidPath(p); err != nil {
		return out, err
	}
	if err := a.mkdirs(p); err != nil {
		return out, err
	}
	cur, err := a.resolve(p)
	if err != nil {
		return out, err
	}
	dir, _ := splitPath(p)
	switch {
	case cur.real != "" && cur.info.Kind == KindDir:
		if cur.real != p {
			out.Collision, out.Path = cur.real, cur.real
		}
		if perm != 0 && cur.info.Mode != perm&fs.ModePerm {
			if err := a.cfg.FS.Chmod(cur.real, perm); err != nil {
				return out, fmt.Errorf("setting mode of %q: %w", cur.real, err)
			}
		}
	default:
		if cur.real != "" {
			if cur.real != p {
				return out, fmt.Errorf("%w: %q collides with %q", ErrLocalChange, p, cur.real)
			}
			if err := a.unchanged(cur); err != nil {
				return out, err
			}
			if err := a.cfg.FS.Remove(p); err != nil {
				return out, fmt.Errorf("removing %q: %w", p, err)
			}
		}
		if perm == 0 {
			perm = 0o755
		}
		if err := a.cfg.FS.Mkdir(p, perm); err != nil {
			return out, fmt.Errorf("creating directory %q: %w", p, err)
		}
		if err := a.cfg.FS.Chmod(p, perm); err != nil { // past the umask
			return out, fmt.Errorf("setting mode of %q: %w", p, err)
		}
		if err := a.cfg.FS.SyncDir(dir); err != nil {
			return out, fmt.Errorf("syncing directory %q: %w", dir, err)
		}
	}
	out.Info, err = a.cfg.FS.Lstat(out.Path)
	return out, err
}

// Delete removes the file, symlink or empty directory at p if it is what
// the index recorded (ErrLocalChange otherwise). A path already gone is
// not an error. On a folding FS, an item whose stored name differs from p
// (a twin that took p's place, or p after a case-only rename) is not p and
// is never deleted. A directory that still holds anything but leftover
// temp files is kept: DirNotEmptyError lists what is there.
func (a *Applier) Delete(ctx context.Context, p string) error {
	if err := ValidPath(p); err != nil {
		return err
	}
	cur, err := a.resolve(p)
	if err != nil || cur.real == "" || cur.real != p {
		return err
	}
	if err := a.unchanged(cur); err != nil {
		return err
	}
	if cur.info.Kind == KindDir {
		if err := a.emptyDir(p); err != nil {
			return err
		}
	}
	if h := a.cfg.TestOnlyBeforeRemove; h != nil {
		h(p)
	}
	if err := a.remove(p, cur); err != nil {
		return err
	}
	dir, _ := splitPath(p)
	if err := a.cfg.FS.SyncDir(dir); err != nil {
		return fmt.Errorf("syncing directory %q: %w", dir, err)
	}
	return nil
}

// Rename moves the indexed, unchanged item at from to to, which must be
// free (on a folding FS it may be from itself under another case or
// normalisation: a case-only rename, which never deletes the file). It
// costs no content transfer; parents of to are created.
func (a *Applier) Rename(ctx context.Context, from, to string) (Outcome, error) {
	out := Outcome{Path: to}
	for _, p := range []string{from, to} {
		if err := ValidPath(p); err != nil {
			return out, err
		}
	}
	src, err := a.resolve(from)
	if err != nil {
		return out, err
	}
	if src.real != from {
		return out, fmt.Errorf("renaming %q: %w", from, fs.ErrNotExist)
	}
	if err := a.unchanged(src); err != nil {
		return out, err
	}
	if err := a.mkdirs(to); err != nil {
		return out, err
	}
	dst, err := a.resolve(to)
	if err != nil {
		return out, err
	}
	if dst.real != "" && !(dst.real == from && a.cfg.Folding.Key(from) == a.cfg.Folding.Key(to)) {
		return out, fmt.Errorf("renaming %q: %w: %q exists", from, ErrLocalChange, dst.real)
	}
	if err := a.move(from, to, dst.real == ""); err != nil {
		return out, err
	}
	dirs := []string{}
	for _, p := range []string{from, to} {
		d, _ := splitPath(p)
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		if err := a.cfg.FS.SyncDir(d); err != nil {
			return out, fmt.Errorf("syncing directory %q: %w", d, err)
		}
	}
	out.Info, err = a.landed(a.cfg.FS, to, src.info)
	return out, err
}

// CleanTemps removes the temporary files a crash left behind anywhere in
// the folder (outside WorkDir) and returns their paths. Call it at
// startup, before any apply, when no scan has listed them (the node uses
// a first scan's Result.Temps and RemoveTemps, which saves this walk).
func (a *Applier) CleanTemps(ctx context.Context) ([]string, error) {
	var found []string
	var walk func(d string) error
	walk = func(d string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ents, err := a.cfg.FS.ReadDir(d)
		if err != nil {
			return fmt.Errorf("listing directory %q: %w", d, err)
		}
		for _, e := range ents {
			p := joinPath(d, e.Name)
			switch {
			case p == WorkDir:
			case strings.HasPrefix(e.Name, TempPrefix) && e.Kind != KindDir:
				found = append(found, p)
			case e.Kind == KindDir:
				if err := walk(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		return nil, err
	}
	return a.RemoveTemps(found)
}

// RemoveTemps removes the temporary files paths (as a scan's Result.Temps
// lists them) and syncs their directories, and returns those it removed
// or found gone. A path that is not a temp file's name, or is in WorkDir,
// is refused: this must never remove anything else. Call it only while no
// apply runs, or it could remove the temp file of one in flight.
//
// A path it cannot remove does not stop it: it goes on with the others and
// returns every failure joined.
func (a *Applier) RemoveTemps(paths []string) ([]string, error) {
	var removed []string
	var errs []error
	dirs := map[string]bool{}
	for _, p := range paths {
		dir, name := splitPath(p)
		if !strings.HasPrefix(name, TempPrefix) || p == WorkDir || strings.HasPrefix(p, WorkDir+"/") {
			errs = append(errs, fmt.Errorf("%w: %q is not a temporary file of the applier", ErrBadPath, p))
			continue
		}
		if err := a.cfg.FS.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %q: %w", p, err))
			continue
		}
		removed = append(removed, p)
		dirs[dir] = true
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := a.cfg.FS.SyncDir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("syncing directory %q: %w", d, err))
		}
	}
	return removed, errors.Join(errs...)
}

// ctxReader stops a copy once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}
