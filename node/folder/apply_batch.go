package folder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
)

// FSSyncer is implemented by file systems that can make all completed
// writes durable at once (OSFS on Linux with syncfs(2), MemFS).
type FSSyncer interface {
	SyncFS() error
}

// FileWrite is one file of a WriteFiles batch.
type FileWrite struct {
	Version FileVersion
	Content io.Reader
}

// WriteResult is the outcome of one file of a batch.
type WriteResult struct {
	Outcome Outcome
	Err     error
}

// WriteFiles writes a batch of files with WriteFile's rules and guarantees
// (temp file, mode and mtime, rename over an unchanged indexed item, never a
// partial file under the final name) but shares the durability work: every
// temp file is written first, then one barrier makes them all durable (one
// syncfs where the FS offers it, else one fsync per file), then the renames,
// then one barrier for the directories. A batch of N small files costs two
// syncs instead of 2N. Each directory written into is opened once for the
// batch and every step of its files acts on names in it (see dirSet), and
// where the temp File offers MetaFile its mode and mtime are set through
// the descriptor. Each file succeeds or fails on its own; the results are
// in the order of ws. The caller must not pass two writes of one path.
func (a *Applier) WriteFiles(ctx context.Context, ws []FileWrite) []WriteResult {
	res := make([]WriteResult, len(ws))
	ds := a.newDirSet()
	defer ds.close()
	type prepared struct {
		i      int
		f      File
		tmp    string
		target string
		cur    existing
		put    FileInfo
	}
	var ready []*prepared
	cleanup := func(p *prepared) {
		if p.f != nil {
			p.f.Close()
		}
		ds.Remove(p.tmp)
	}
	// 1. Write every temp file.
	for i, w := range ws {
		if err := ctx.Err(); err != nil {
			res[i].Err = err
			continue
		}
		p, err := a.prepare(ctx, ds, w, &res[i].Outcome)
		if err != nil {
			res[i].Err = err
			continue
		}
		ready = append(ready, &prepared{i: i, f: p.f, tmp: p.tmp, target: p.target, cur: p.cur, put: p.put})
	}
	// 2. One barrier for the contents.
	syncer, canSyncAll := a.cfg.FS.(FSSyncer)
	if canSyncAll {
		if err := syncer.SyncFS(); err != nil {
			for _, p := range ready {
				res[p.i].Err = fmt.Errorf("syncing %q: %w", p.target, err)
				cleanup(p)
			}
			return res
		}
	}
	var renamed []*prepared
	for _, p := range ready {
		if !canSyncAll {
			if err := p.f.Sync(); err != nil {
				res[p.i].Err = fmt.Errorf("syncing %q: %w", p.target, err)
				cleanup(p)
				continue
			}
		}
		if err := p.f.Close(); err != nil {
			p.f = nil
			res[p.i].Err = fmt.Errorf("closing %q: %w", p.target, err)
			cleanup(p)
			continue
		}
		p.f = nil
		// 3. Rename into place, re-checking the target first.
		if err := a.rename(ds, p.tmp, p.target, p.cur); err != nil {
			if errors.Is(err, errAborted) {
				continue // leave the temp file, as a crash would
			}
			if errors.Is(err, errKeepTemp) {
				res[p.i].Err = err // the temp name holds the user's item
				continue
			}
			res[p.i].Err = err
			cleanup(p)
			continue
		}
		renamed = append(renamed, p)
	}
	// 4. One barrier for the directories.
	var derr error
	if canSyncAll {
		derr = syncer.SyncFS()
	} else {
		var dirs []string
		for _, p := range renamed {
			dir, _ := splitPath(p.target)
			if !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
		}
		for _, d := range dirs {
			if err := a.cfg.FS.SyncDir(d); err != nil {
				derr = errors.Join(derr, fmt.Errorf("syncing directory %q: %w", d, err))
			}
		}
	}
	for _, p := range renamed {
		if derr != nil {
			res[p.i].Err = derr
			continue
		}
		res[p.i].Outcome.Info, res[p.i].Err = a.landed(ds, p.target, p.put)
	}
	return res
}

// preparedFile is a complete temp file not yet durable or renamed.
type preparedFile struct {
	f      File
	tmp    string
	target string
	cur    existing
	put    FileInfo // the complete temp file's fstat (see landed)
}

// prepare does WriteFile's steps up to, not including, the fsync, with
// the target's directory held open in ds.
func (a *Applier) prepare(ctx context.Context, ds *dirSet, w FileWrite, out *Outcome) (preparedFile, error) {
	v := w.Version
	out.Path = v.Path
	if err := ValidPath(v.Path); err != nil {
		return preparedFile{}, err
	}
	dir, _ := splitPath(v.Path)
	d, err := ds.open(dir)
	if err != nil {
		return preparedFile{}, err
	}
	target, cur, err := a.place(ds, v.Path, out)
	if err != nil {
		return preparedFile{}, err
	}
	out.Path = target
	perm := fs.FileMode(0o644)
	if cur.real != "" && cur.info.Kind == KindFile {
		perm = cur.info.Mode
	}
	if v.Executable {
		perm |= (perm & 0o444) >> 2
	} else {
		perm &^= 0o111
	}
	if tdir, _ := splitPath(target); tdir != dir { // never: a collision name keeps the directory
		if d, err = ds.open(tdir); err != nil {
			return preparedFile{}, err
		}
	}
	f, err := d.CreateTemp(TempPrefix)
	if err != nil {
		return preparedFile{}, fmt.Errorf("creating temp file for %q: %w", target, err)
	}
	tmp := f.Path()
	fail := func(err error) (preparedFile, error) {
		f.Close()
		ds.Remove(tmp)
		return preparedFile{}, err
	}
	n, err := io.CopyBuffer(f, &ctxReader{ctx: ctx, r: io.LimitReader(w.Content, v.Size+1)}, ds.copyBuf())
	if err != nil {
		return fail(fmt.Errorf("writing %q: %w", target, err))
	}
	if n != v.Size {
		return fail(fmt.Errorf("%w: %q got %d bytes, want %d", ErrSizeMismatch, target, n, v.Size))
	}
	if err := a.setMeta(f, target, perm, v.MTime); err != nil {
		return fail(err)
	}
	put, err := f.Stat()
	if err != nil {
		return fail(fmt.Errorf("looking at the temp file for %q: %w", target, err))
	}
	return preparedFile{f: f, tmp: tmp, target: target, cur: cur, put: put}, nil
}

// setMeta sets the mode and then the mtime of the complete temp file f
// for target, through its descriptor when it is a MetaFile.
func (a *Applier) setMeta(f File, target string, perm fs.FileMode, mtime int64) error {
	var err error
	if mf, ok := f.(MetaFile); ok {
		err = mf.Chmod(perm)
	} else {
		err = a.cfg.FS.Chmod(f.Path(), perm)
	}
	if err != nil {
		return fmt.Errorf("setting mode of %q: %w", target, err)
	}
	if mf, ok := f.(MetaFile); ok {
		err = mf.Chtimes(mtime)
	} else {
		err = a.cfg.FS.Chtimes(f.Path(), mtime)
	}
	if err != nil {
		return fmt.Errorf("setting mtime of %q: %w", target, err)
	}
	return nil
}

// rename is commit without the directory fsync; its lstats, renames and
// removals go through ops.
func (a *Applier) rename(ops nameOps, tmp, target string, cur existing) error {
	if err := a.stillSame(ops, target, cur); err != nil {
		return err
	}
	if err := a.clearDir(target, cur); err != nil {
		return err
	}
	if h := a.cfg.TestOnlyBeforeRename; h != nil {
		if err := h(tmp, target); err != nil {
			return fmt.Errorf("%w: %w", errAborted, err)
		}
	}
	if ar, ok := ops.(AtomicReplacer); ok {
		err := a.replaceAtomic(ar, ops, tmp, target, cur)
		if !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
	}
	if err := ops.Rename(tmp, target); err != nil {
		return fmt.Errorf("renaming into %q: %w", target, err)
	}
	return nil
}
