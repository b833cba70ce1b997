package restore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/content"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/history"
	"github.com/weftsync/weft/protocol/entry"
)

// A restore is a local edit made on the user's behalf: the old content is
// written through the applier (temporary file, fsync, rename, directory
// fsync; it refuses to replace anything changed since its last scan), then
// the written paths are scanned and recorded like any local change, except
// that each new version supersedes every head of its path. Before anything
// is written, a restore checks that each path is settled (every head is
// applied here), that nothing changed on disk since the last scan, and
// fetches into memory every chunk it needs that no local file holds, so a
// restore that cannot get its content fails with nothing changed.

// CacheLimit bounds the chunk bytes a restore fetches up front. Beyond it
// the content is streamed from peers while it is written, as the applier
// does, and a file whose chunks cannot all be had is left as it was, but
// files restored before it stay restored.
const CacheLimit = 256 << 20

// Vault is what a restore needs of one vault on this device.
type Vault interface {
	// Folder is the vault's folder, as the user named it.
	Folder() string
	// LockScans and UnlockScans hold the vault's scans from the check to
	// the record: a scan in between would record the restored files
	// without their supersedes.
	LockScans()
	UnlockScans()
	// PlanOne and PlanAll are node/history's plans over what the vault
	// knows: one path to the version named by id or current at t (unix
	// ms), or every path at or under prefix to what was current at t.
	PlanOne(path, id string, t int64) ([]history.Item, error)
	PlanAll(prefix string, t int64) ([]history.Item, error)
	// Settled reports whether this device applied every head of path.
	Settled(path string) bool
	// ScanPaths scans paths without recording anything.
	ScanPaths(ctx context.Context, paths []string) (folder.Result, error)
	// Where says where content is, for history.ContentSource; one
	// restore asks one value.
	Where() history.Where
	// Fetch fetches chunks from peers and hands each one's plaintext to
	// got, from several goroutines at once. A chunk no peer sent is an
	// error wrapping content.ErrChunkMissing.
	Fetch(ctx context.Context, cids []cid.Cid, got func(c cid.Cid, plain []byte) error) error
	// Local re-creates a chunk's plaintext from a local file or the
	// version store.
	Local(c cid.Cid) ([]byte, error)
	// Stream yields a file version's plaintext in order, fetching what
	// no local store holds while it is read; stop releases it.
	Stream(ctx context.Context, ver entry.Version) (r io.Reader, stop func())
	// Full returns the version with its inline content, which the
	// vault's bodies do not keep.
	Full(id entry.VersionID, ver entry.Version) (entry.Version, error)
	// Applier writes to the folder.
	Applier() *folder.Applier
	// TopNewAncestor is the highest ancestor of path the folder index
	// does not hold (the applier creates it), or path: what to scan to
	// record everything a restore of path writes.
	TopNewAncestor(path string) string
	// Record scans paths and records what changed, each new version
	// superseding every head of its path that this device had applied.
	// held reports that this device may not author yet (after a start,
	// docs/sync.md): the files stay written and a later rescan records
	// them.
	Record(ctx context.Context, paths []string) (held bool, err error)
	// OwnHead is the ID of path's one head when this device authored it.
	OwnHead(path string) (entry.VersionID, bool)
}

// Target is a vault to restore in, and what in it.
type Target struct {
	Vault Vault
	// Path is the path in the vault's folder; "" with All is the
	// whole folder.
	Path string
	// All restores every path at or under Path to what was current at
	// the time asked; otherwise Path alone is restored.
	All bool
}

// Run carries out (or, with req.DryRun, plans) a restore over targets;
// at is the time asked (zero: no time, only req.Version), and now dates
// the files written (a restore is a new edit), read as each vault's
// writes begin. Every path in
// every target is checked before anything is written. Errors wrap one of
// node/history's errors (ErrBadRestore, ErrNoHistory, ErrNoSuchVersion,
// ErrNotSettled, ErrChangedSinceScan, ErrContentUnavailable); all of them
// but a failure part-way through a large restore (see CacheLimit) mean
// nothing was changed.
func Run(ctx context.Context, req api.RestoreRequest, at time.Time, targets []Target, now func() time.Time) (api.RestoreResult, error) {
	res := api.RestoreResult{DryRun: req.DryRun, Changes: []api.RestoreChange{}, Failed: []api.RestoreFailure{}}
	if !at.IsZero() {
		u := at.UTC()
		res.At = &u
	}
	type job struct {
		v     Vault
		items []history.Item
	}
	jobs := make([]job, 0, len(targets))
	for _, t := range targets {
		var (
			items []history.Item
			err   error
		)
		if t.All {
			items, err = t.Vault.PlanAll(t.Path, at.UnixMilli())
		} else {
			items, err = t.Vault.PlanOne(t.Path, req.Version, at.UnixMilli())
		}
		if err != nil {
			return res, err
		}
		jobs = append(jobs, job{t.Vault, items})
	}
	plans := make([]*plan, len(jobs))
	unlock := func(ps []*plan) {
		for _, p := range ps {
			if p != nil {
				p.v.UnlockScans()
			}
		}
	}
	for i, j := range jobs {
		j.v.LockScans()
		p, err := check(ctx, j.v, j.items, req.DryRun)
		if err != nil || req.DryRun {
			j.v.UnlockScans()
		}
		if err != nil {
			if !req.DryRun {
				unlock(plans[:i])
			}
			return res, err
		}
		plans[i] = p
		res.Failed = append(res.Failed, p.failed...)
	}
	if req.DryRun {
		for _, p := range plans {
			for _, it := range p.ok {
				res.Changes = append(res.Changes, it.Change(p.v.Folder()))
			}
		}
		return res, nil
	}
	if len(res.Failed) > 0 && !req.Partial {
		unlock(plans)
		return res, history.FailedErr(res.Failed)
	}
	var werr error
	for _, p := range plans {
		if werr == nil {
			var done []api.RestoreChange
			done, werr = p.write(ctx, now().UnixNano())
			res.Changes = append(res.Changes, done...)
		}
		p.v.UnlockScans()
	}
	if werr != nil {
		if len(res.Changes) > 0 {
			return res, fmt.Errorf("restored %d paths, then: %w", len(res.Changes), werr)
		}
		return res, werr
	}
	return res, nil
}

// plan is what a restore of one vault will do once checked: the items
// that can be restored (with the content fetched for them), and those
// that cannot.
type plan struct {
	v      Vault
	ok     []history.Item
	failed []api.RestoreFailure
	cache  map[cid.Cid][]byte // fetched plaintexts; nil: stream while writing
}

// check checks every item before anything is written: a path with heads
// not applied here (a remote version still on its way would be superseded
// unseen) or changed on disk since its last scan cannot be restored, nor
// one whose content no local store holds and no connected device or relay
// sends. The content to fetch is fetched now: kept in memory up to
// CacheLimit for the restore, or dropped on a dry run (which so checks
// everything a restore would need). The vault's scans must be held.
func check(ctx context.Context, v Vault, items []history.Item, dryRun bool) (*plan, error) {
	p := &plan{v: v}
	folderPath := v.Folder()
	paths := make([]string, 0, len(items))
	bad := map[string]bool{}
	for _, it := range items {
		if !v.Settled(it.Path) {
			p.failed = append(p.failed, it.Failure(folderPath, history.FailSyncing, "versions not applied here yet; try again once `weft status` shows the folder in sync"))
			bad[it.Path] = true
		}
		paths = append(paths, it.Path)
	}
	res, err := v.ScanPaths(ctx, paths)
	if err != nil {
		return nil, fmt.Errorf("checking the folder: %w", err)
	}
	changed := map[string]bool{}
	for _, c := range res.Unsettled {
		changed[c] = true
	}
	for _, c := range res.Changes {
		changed[c.Path] = true
	}
	// Where each item's content comes from, and what must be fetched.
	need := map[cid.Cid][]int{} // chunk -> items needing it
	var needOrder []cid.Cid
	var total int64
	where := v.Where()
	for i := range items {
		it := &items[i]
		if bad[it.Path] {
			continue
		}
		if changed[it.Path] {
			p.failed = append(p.failed, it.Failure(folderPath, history.FailChanged, "changed on disk since its last scan; let weft record the edit (`weft scan`) and restore again"))
			bad[it.Path] = true
			continue
		}
		if it.From == nil || it.From.Ver.Kind != entry.KindFile {
			continue
		}
		it.Content = history.ContentSource(it.From.Ver, where)
		for _, r := range it.From.Ver.Chunks {
			if where.InFolder(r.CID) || where.Kept(r.CID) {
				continue
			}
			if _, seen := need[r.CID]; !seen {
				needOrder = append(needOrder, r.CID)
				total += int64(r.Size)
			}
			need[r.CID] = append(need[r.CID], i)
		}
	}
	var unavailable map[int]int // item -> chunks missing
	var why string
	if len(needOrder) > 0 {
		keep := !dryRun && total <= CacheLimit
		if keep {
			p.cache = map[cid.Cid][]byte{}
		}
		if !dryRun && !keep {
			// Too much to hold: streamed while written (CacheLimit).
			needOrder = nil
		}
		var mu sync.Mutex
		got := map[cid.Cid]bool{}
		ferr := v.Fetch(ctx, needOrder, func(c cid.Cid, b []byte) error {
			mu.Lock()
			defer mu.Unlock()
			got[c] = true
			if keep {
				p.cache[c] = b
			}
			return nil
		})
		if ferr != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if ferr != nil {
			why = ferr.Error()
			unavailable = map[int]int{}
			for _, c := range needOrder {
				if !got[c] {
					for _, i := range need[c] {
						unavailable[i]++
					}
				}
			}
		}
	}
	for i, it := range items {
		if bad[it.Path] {
			continue
		}
		if n := unavailable[i]; n > 0 {
			p.failed = append(p.failed, it.Failure(folderPath, history.FailUnavailable,
				fmt.Sprintf("the content of this version is not available: %d of its %d chunks are in no local store and no connected device or relay sent them (%s)", n, len(it.From.Ver.Chunks), why)))
			continue
		}
		p.ok = append(p.ok, it)
	}
	return p, nil
}

// write writes a checked plan's items and has them recorded as new
// versions, dated now (unix ns: a restore is a new edit). It returns the
// changes made. A failure while writing (content streamed beyond
// CacheLimit that a peer no longer sends, a disk error) stops the
// restore, and what was written until then is recorded. The vault's
// scans must be held (since check).
func (p *plan) write(ctx context.Context, now int64) ([]api.RestoreChange, error) {
	if len(p.ok) == 0 {
		return nil, nil
	}
	var written []history.Item
	var scanPaths []string
	var werr error
	for _, it := range p.ok {
		if werr = ctx.Err(); werr != nil {
			break
		}
		top := p.v.TopNewAncestor(it.Path)
		if werr = p.writeItem(ctx, it, now); werr != nil {
			werr = fmt.Errorf("restoring %s: %w", it.Path, classify(werr))
			break
		}
		written = append(written, it)
		scanPaths = append(scanPaths, top)
	}
	var unrecorded bool
	if len(scanPaths) > 0 {
		held, err := p.v.Record(ctx, scanPaths)
		if err != nil {
			return nil, errors.Join(werr, fmt.Errorf("recording the restore: %w", err))
		}
		// Alone since its start, this device may not sign entries yet.
		// The content is back on disk, which is what the user asked; the
		// rescan that runs once authoring opens records it, like an edit
		// made meanwhile.
		unrecorded = held
	}
	out := make([]api.RestoreChange, 0, len(written))
	for _, it := range written {
		c := it.Change(p.v.Folder())
		c.Unrecorded = unrecorded
		if id, ok := p.v.OwnHead(it.Path); ok && !unrecorded {
			c.Version = history.IDString(id)
		}
		out = append(out, c)
	}
	return out, werr
}

// classify names the restore errors a user can act on.
func classify(err error) error {
	switch {
	case errors.Is(err, folder.ErrLocalChange):
		return fmt.Errorf("%w: %v", history.ErrChangedSinceScan, err)
	case errors.Is(err, content.ErrChunkMissing):
		return fmt.Errorf("%w: %v", history.ErrContentUnavailable, err)
	}
	return err
}

// writeItem makes the disk at it.Path hold it.From's content (mtime now)
// or nothing.
func (p *plan) writeItem(ctx context.Context, it history.Item, now int64) error {
	a := p.v.Applier()
	if it.From == nil {
		return a.Delete(ctx, it.Path)
	}
	ver, err := p.v.Full(it.From.ID, it.From.Ver)
	if err != nil {
		return err
	}
	switch ver.Kind {
	case entry.KindDir:
		_, err := a.MakeDir(ctx, it.Path, fs.FileMode(ver.Mode).Perm()|0o700)
		return err
	case entry.KindSymlink:
		_, err := a.WriteSymlink(ctx, it.Path, ver.Target)
		return err
	case entry.KindFile:
		var r io.Reader
		switch {
		case p.cache != nil && len(ver.Chunks) == 0:
			r = bytes.NewReader(ver.Inline)
		case p.cache != nil:
			r = &cachedReader{ctx: ctx, v: p.v, refs: ver.Chunks, cache: p.cache}
		default:
			sr, stop := p.v.Stream(ctx, ver)
			defer stop()
			r = sr
		}
		_, err := a.WriteFile(ctx, folder.FileVersion{
			Path: it.Path, Size: int64(ver.Size), MTime: now, Executable: ver.Mode&0o111 != 0,
		}, r)
		return err
	}
	return fmt.Errorf("version of unknown kind %s", ver.Kind)
}

// cachedReader yields a file's plaintext chunk by chunk: from the
// prefetched cache, else re-created from a local file, else fetched.
type cachedReader struct {
	ctx   context.Context
	v     Vault
	refs  []entry.ChunkRef
	cache map[cid.Cid][]byte
	cur   []byte
}

func (r *cachedReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if len(r.refs) == 0 {
			return 0, io.EOF
		}
		ref := r.refs[0]
		r.refs = r.refs[1:]
		b, ok := r.cache[ref.CID]
		if !ok {
			var err error
			if b, err = r.v.Local(ref.CID); err != nil {
				// The local file changed since the plan: fetch instead.
				var mu sync.Mutex
				err = r.v.Fetch(r.ctx, []cid.Cid{ref.CID}, func(_ cid.Cid, plain []byte) error {
					mu.Lock()
					b = plain
					mu.Unlock()
					return nil
				})
				if err != nil {
					return 0, err
				}
			}
		}
		if len(b) != int(ref.Size) {
			return 0, fmt.Errorf("chunk %s: %d bytes, want %d", ref.CID, len(b), ref.Size)
		}
		r.cur = b
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}
