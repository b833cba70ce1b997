package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/history"
	"github.com/weftsync/weft/node/memindex"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// Restore brings old versions back as new versions (docs/history.md).
//
// A restore is a local edit made on the user's behalf: the old content is
// written through the applier (temporary file, fsync, rename, directory
// fsync; it refuses to replace anything changed since its last scan), then
// the written paths are scanned and recorded like any local change, except
// that each new version supersedes every head of its path. Before anything
// is written, a restore checks that each path is settled (every head is
// applied here), that nothing changed on disk since the last scan, and
// fetches into memory every chunk it needs that no local file holds, so a
// restore that cannot get its content fails with nothing changed.

// restoreCacheLimit bounds the chunk bytes a restore fetches up front.
// Beyond it the content is streamed from peers while it is written, as
// the applier does, and a file whose chunks cannot all be had is left as
// it was, but files restored before it stay restored.
const restoreCacheLimit = 256 << 20

// Restore carries out (or, with DryRun, plans) a restore. Errors wrap
// errNotInFolder or one of node/history's errors (ErrBadRestore,
// ErrNoHistory, ErrNoSuchVersion, ErrNotSettled, ErrChangedSinceScan,
// ErrContentUnavailable); all of them
// but a failure part-way through a large --all restore (see
// restoreCacheLimit) mean nothing was changed.
func (n *Node) Restore(ctx context.Context, req api.RestoreRequest) (api.RestoreResult, error) {
	res := api.RestoreResult{DryRun: req.DryRun, Changes: []api.RestoreChange{}, Failed: []api.RestoreFailure{}}
	var at time.Time
	if err := history.CheckRequest(req); err != nil {
		return res, err
	}
	if req.At != "" {
		var err error
		// Relative times count back from the corrected clock, the one
		// entries are dated by (node/clock).
		if at, err = history.ParseAt(req.At, n.vaultNow()); err != nil {
			return res, err
		}
		u := at.UTC()
		res.At = &u
	}
	type job struct {
		v     *vault
		items []history.Item
	}
	var jobs []job
	if req.Path == "" {
		for _, v := range n.vaultsNow() {
			items, err := v.planAll("", at.UnixMilli())
			if err != nil {
				return res, err
			}
			jobs = append(jobs, job{v, items})
		}
	} else {
		v, rel, err := n.resolvePath(req.Path)
		if err != nil {
			return res, err
		}
		var items []history.Item
		if req.All {
			items, err = v.planAll(rel, at.UnixMilli())
		} else {
			items, err = v.planOne(rel, req.Version, at.UnixMilli())
		}
		if err != nil {
			return res, err
		}
		jobs = append(jobs, job{v, items})
	}
	// Every path is checked before anything is written, in every folder.
	plans := make([]*restorePlan, len(jobs))
	for i, j := range jobs {
		j.v.scanMu.Lock()
		p, err := j.v.planRestore(ctx, j.items, req.DryRun)
		if err != nil || req.DryRun {
			j.v.scanMu.Unlock()
		}
		if err != nil {
			for _, pp := range plans[:i] {
				if pp != nil && !req.DryRun {
					pp.v.scanMu.Unlock()
				}
			}
			return res, err
		}
		plans[i] = p
		res.Failed = append(res.Failed, p.failed...)
	}
	if req.DryRun {
		for _, p := range plans {
			for _, it := range p.ok {
				res.Changes = append(res.Changes, it.Change(p.v.cfg.Folder))
			}
		}
		return res, nil
	}
	if len(res.Failed) > 0 && !req.Partial {
		for _, p := range plans {
			p.v.scanMu.Unlock()
		}
		return res, history.FailedErr(res.Failed)
	}
	var werr error
	for _, p := range plans {
		if werr == nil {
			var done []api.RestoreChange
			done, werr = p.v.restore(ctx, p)
			res.Changes = append(res.Changes, done...)
		}
		p.v.scanMu.Unlock()
	}
	if werr != nil {
		if len(res.Changes) > 0 {
			return res, fmt.Errorf("restored %d paths, then: %w", len(res.Changes), werr)
		}
		return res, werr
	}
	return res, nil
}

// planOne plans restoring path to the version named by id, or else to the
// one current at t (unix ms): history.PlanOne over what the vault knows.
func (v *vault) planOne(path, id string, t int64) ([]history.Item, error) {
	return history.PlanOne(v.historyPath(path), id, t, v.entryTimes())
}

// planAll plans restoring every path at or under prefix to what was
// current at t (unix ms): history.PlanAll over what the vault knows.
func (v *vault) planAll(prefix string, t int64) ([]history.Item, error) {
	v.mu.Lock()
	byPath := v.versionsByPathLocked(func(p string) bool { return under(p, prefix) })
	index := map[string]engine.Disk{}
	for p := range byPath {
		if r, ok := v.index.Get(p); ok {
			index[p] = diskOf(r)
		}
	}
	v.mu.Unlock()
	return history.PlanAll(byPath, index, t, v.entryTimes())
}

// restorePlan is what a restore of one vault will do once checked: the
// items that can be restored (with the content fetched for them), and
// those that cannot.
type restorePlan struct {
	v      *vault
	ok     []history.Item
	failed []api.RestoreFailure
	cache  map[cid.Cid][]byte // fetched plaintexts; nil: stream while writing
}

// planRestore checks every item before anything is written: a path with
// heads not applied here (a remote version still on its way would be
// superseded unseen) or changed on disk since its last scan cannot be
// restored, nor one whose content no local store holds and no connected
// device or relay sends. The content to fetch is fetched now: kept in
// memory up to restoreCacheLimit for the restore, or dropped on a dry
// run (which so checks everything a restore would need). v.scanMu must be
// held.
func (v *vault) planRestore(ctx context.Context, items []history.Item, dryRun bool) (*restorePlan, error) {
	p := &restorePlan{v: v}
	folderPath := v.cfg.Folder
	paths := make([]string, 0, len(items))
	bad := map[string]bool{}
	v.mu.Lock()
	for _, it := range items {
		if _, ok := v.appliedHeadsLocked(it.Path); !ok {
			p.failed = append(p.failed, it.Failure(folderPath, history.FailSyncing, "versions not applied here yet; try again once `weft status` shows the folder in sync"))
			bad[it.Path] = true
		}
		paths = append(paths, it.Path)
	}
	v.mu.Unlock()
	res, err := v.scanner.ScanPaths(ctx, paths)
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
	where := &contentWhere{v: v} // who is connected is looked up once
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
		keep := !dryRun && total <= restoreCacheLimit
		if keep {
			p.cache = map[cid.Cid][]byte{}
		}
		if !dryRun && !keep {
			// Too much to hold: streamed while written (restoreCacheLimit).
			needOrder = nil
		}
		var mu sync.Mutex
		got := map[cid.Cid]bool{}
		ferr := v.fetchFromPeers(ctx, needOrder, func(c cid.Cid, env []byte) error {
			b, err := v.crypt.OpenChunk(c, env)
			if err != nil {
				return fmt.Errorf("chunk %s: %w", c, err)
			}
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

// restore writes a checked plan's items and records them as new
// versions. It returns the changes made. A failure while writing (content
// streamed beyond restoreCacheLimit that a peer no longer sends, a disk
// error) stops the restore, and what was written until then is recorded.
// v.scanMu must be held (since planRestore: a watcher scan in between
// would record the restored files without their supersedes).
func (v *vault) restore(ctx context.Context, p *restorePlan) ([]api.RestoreChange, error) {
	if len(p.ok) == 0 {
		return nil, nil
	}
	now := v.n.now().UnixNano()
	var written []history.Item
	var scanPaths []string
	var werr error
	for _, it := range p.ok {
		if werr = ctx.Err(); werr != nil {
			break
		}
		v.mu.Lock()
		top := topNewAncestorLocked(v, it.Path)
		v.mu.Unlock()
		if werr = v.writeRestored(ctx, it, now, p.cache); werr != nil {
			werr = fmt.Errorf("restoring %s: %w", it.Path, classifyRestoreErr(werr))
			break
		}
		written = append(written, it)
		scanPaths = append(scanPaths, top)
	}
	unrecorded := false
	if err := v.recordRestored(ctx, scanPaths); errors.Is(err, errAuthoringHeld) {
		// Alone since its start, this device may not sign entries yet
		// (logtail.go). The content is back on disk, which is what the
		// user asked; the rescan that runs once authoring opens records
		// it, like an edit made meanwhile.
		unrecorded = true
	} else if err != nil {
		return nil, errors.Join(werr, fmt.Errorf("recording the restore: %w", err))
	}
	out := make([]api.RestoreChange, 0, len(written))
	v.mu.Lock()
	for _, it := range written {
		c := it.Change(v.cfg.Folder)
		c.Unrecorded = unrecorded
		if hs := v.graph.Heads(it.Path); !unrecorded && len(hs) == 1 && hs[0].ID.Author == v.n.id.ID() {
			c.Version = history.IDString(hs[0].ID)
		}
		out = append(out, c)
	}
	v.mu.Unlock()
	return out, werr
}

// listPaths names up to five paths.
func listPaths(ps []string) string {
	if len(ps) > 5 {
		return strings.Join(ps[:5], ", ") + fmt.Sprintf(" and %d more", len(ps)-5)
	}
	return strings.Join(ps, ", ")
}

// appliedHeadsLocked returns the heads of path, sorted and capped for a
// Supersedes list, and whether this device has applied every one of
// them: the index holds the head's content, or nothing for a deletion.
// v.mu must be held.
func (v *vault) appliedHeadsLocked(path string) ([]entry.VersionID, bool) {
	cur, had := v.index.Get(path)
	var ids []entry.VersionID
	for _, h := range v.graph.Heads(path) {
		applied := !had
		if h.Kind != protocol.KindDeletion {
			applied = had && engine.SameContent(h, diskOf(cur))
		}
		if !applied {
			return nil, false
		}
		ids = append(ids, h.ID)
	}
	slices.SortFunc(ids, func(a, b entry.VersionID) int { return a.Compare(b) })
	if len(ids) > entry.MaxSupersedes {
		ids = ids[:entry.MaxSupersedes]
	}
	return ids, true
}

// topNewAncestorLocked returns the highest ancestor of p that the index
// does not hold (the applier creates it), or p itself: the path whose
// scan records everything the restore of p writes. v.mu must be held.
func topNewAncestorLocked(v *vault, p string) string {
	top := p
	for d := memindex.ParentDir(p); d != ""; d = memindex.ParentDir(d) {
		if _, ok := v.index.Get(d); ok {
			break
		}
		top = d
	}
	return top
}

// classifyRestoreErr names the restore errors a user can act on.
func classifyRestoreErr(err error) error {
	switch {
	case errors.Is(err, folder.ErrLocalChange):
		return fmt.Errorf("%w: %v", history.ErrChangedSinceScan, err)
	case errors.Is(err, errChunkMissing):
		return fmt.Errorf("%w: %v", history.ErrContentUnavailable, err)
	}
	return err
}

// writeRestored makes the disk at it.Path hold it.From's content (mtime
// now: a restore is a new edit) or nothing. v.scanMu must be held.
func (v *vault) writeRestored(ctx context.Context, it history.Item, now int64, cache map[cid.Cid][]byte) error {
	a := v.applier
	if it.From == nil {
		return a.Delete(ctx, it.Path)
	}
	ver, err := v.withInline(it.From.ID, it.From.Ver) // inline.go
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
		var content io.Reader
		if cache != nil {
			content = &restoreReader{ctx: ctx, v: v, refs: ver.Chunks, cache: cache}
			if len(ver.Chunks) == 0 {
				content = bytes.NewReader(ver.Inline)
			}
		} else {
			r, stop := v.contentReader(ctx, ver)
			defer stop()
			content = r
		}
		_, err := a.WriteFile(ctx, folder.FileVersion{
			Path: it.Path, Size: int64(ver.Size), MTime: now, Executable: ver.Mode&0o111 != 0,
		}, content)
		return err
	}
	return fmt.Errorf("version of unknown kind %s", ver.Kind)
}

// restoreReader yields a file's plaintext chunk by chunk: from the
// prefetched cache, else re-created from a local file, else fetched.
type restoreReader struct {
	ctx   context.Context
	v     *vault
	refs  []entry.ChunkRef
	cache map[cid.Cid][]byte
	cur   []byte
}

func (r *restoreReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if len(r.refs) == 0 {
			return 0, io.EOF
		}
		ref := r.refs[0]
		r.refs = r.refs[1:]
		b, ok := r.cache[ref.CID]
		if !ok {
			var err error
			if b, err = r.v.localPlaintext(ref.CID); err != nil {
				// The local file changed since the plan: fetch instead.
				var mu sync.Mutex
				err = r.v.fetchFromPeers(r.ctx, []cid.Cid{ref.CID}, func(c cid.Cid, env []byte) error {
					plain, err := r.v.crypt.OpenChunk(c, env)
					mu.Lock()
					b = plain
					mu.Unlock()
					return err
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

// recordRestored scans what the restore wrote and records it like any
// local change, except that a version at a path whose heads this device
// had all applied supersedes every one of them (a restore replaces what
// is current, including a deletion). A path whose heads changed meanwhile
// (a remote version arrived) keeps the normal rule, and meets that
// version as a concurrent one. v.scanMu must be held.
func (v *vault) recordRestored(ctx context.Context, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	start := time.Now()
	res, err := v.scanner.ScanPaths(ctx, paths)
	v.noteScan(start, paths, res, err)
	if err != nil {
		return err
	}
	v.authorMu.Lock()
	defer v.authorMu.Unlock()
	var (
		batch   []entry.Version
		records []vaultdb.Record
		changed []string
		inline  int
	)
	flush := func() error {
		if len(batch) == 0 && len(changed) == 0 {
			return nil
		}
		err := v.author(batch, changed, records)
		batch, records, changed, inline = nil, nil, nil, 0
		return err
	}
	for _, c := range res.Changes {
		v.noteLocalChange(c)
		v.mu.Lock()
		heads, settled := v.appliedHeadsLocked(c.Path)
		v.mu.Unlock()
		ver, rec, ok := v.versionFor(c, false)
		if !ok && settled && len(heads) > 0 && c.Type == folder.Deleted {
			ver, ok = entry.Version{Path: c.Path, Kind: entry.KindDeletion}, true
		}
		if ok && ver.Kind == entry.KindDeletion {
			// The user asked for it: other devices apply it even when a
			// restore to an earlier time deletes most of the folder.
			ver.Mode = entry.DeletionConfirmed
		}
		if ok {
			if settled && len(heads) > 0 {
				ver.Supersedes = heads
			}
			if len(batch) == maxVersionsPerEntry || inline+len(ver.Inline) > maxInlinePerEntry {
				if err := flush(); err != nil {
					return err
				}
			}
			batch = append(batch, ver)
			inline += len(ver.Inline)
		}
		changed = append(changed, c.Path)
		records = append(records, rec)
	}
	return flush()
}
