package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/content"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/homefull"
	"github.com/weftsync/weft/node/keeper"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// reconcileRetry is how often the reconcile loop runs a pass unasked:
// paths whose apply failed are retried, and waits for history end.
const reconcileRetry = 2 * time.Second

// reconcileLoop is the vault's one reconcile goroutine (Run owns it,
// startVault): once the temp files of an earlier run are removed, it runs
// a pass whenever the vault is kicked and every reconcileRetry. Only this
// goroutine runs passes, so one vault's slow apply (a large file
// fetched) holds up no other vault.
func (v *vault) reconcileLoop(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-v.cleaned:
		// Temp files of a previous run are removed: applying before could
		// have one of its own removed too.
	}
	tick := time.NewTicker(reconcileRetry)
	defer tick.Stop()
	for {
		if v.mayReconcile() {
			v.reconcile(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-v.kicked:
		case <-tick.C:
		}
	}
}

// mayReconcile reports whether a pass should run now: something is dirty,
// the home disk has room (retryHome kicks once it has, homefull.go), and
// this device's log is known whole and the folder rescanned (logtail.go:
// an apply could otherwise meet a local edit not yet recorded).
func (v *vault) mayReconcile() bool {
	if v.home.Full() || v.tail.ReconcileHeld() {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.eng.HasReady()
}

// reconcile brings every dirty path of the vault to what the sync core
// decides. Paths whose apply fails stay dirty and are retried on the next
// kick or tick.
func (v *vault) reconcile(ctx context.Context) {
	if _, err := v.guard(); err != nil {
		return // the folder is stopped: dirty paths wait until it is back
	}
	// The engine takes every dirty path into one pass, in the order of
	// engine.Order (non-deletions parents first, then deletions children
	// first, then names a deletion frees), without the deletions the
	// mass-delete guard holds (massdelete.go).
	v.mu.Lock()
	v.eng.Tick(v.n.now())
	rd := v.eng.Ready(guardIndex{v})
	v.pending.passBytes = engine.BytesToWrite(v.view.Graph, slices.Concat(rd.Adds, rd.AfterDeletions), func(p string) (protocol.VersionID, bool) {
		rec, ok := v.index.Get(p)
		return rec.Version, ok
	})
	v.pending.written.Store(0)
	v.mu.Unlock()
	v.noteIncomingHold(rd.Guard)
	adds := v.applySmallFiles(ctx, rd.Adds)
	for _, batch := range [][]string{adds, rd.Deletions, rd.AfterDeletions} {
		for _, p := range batch {
			if ctx.Err() != nil {
				// Not carried out: dirty again, for the next run.
				v.mu.Lock()
				v.eng.Step(engine.Failed{Path: p, Waiting: true})
				v.mu.Unlock()
				continue
			}
			v.reconcileOne(ctx, p)
		}
	}
	v.mu.Lock()
	v.eng.Advance(rd)
	v.pending.passBytes = 0
	v.mu.Unlock()
	v.n.events.Publish(api.Event{Type: api.EventReconciled, Folder: v.cfg.Folder})
}

func (v *vault) reconcileOne(ctx context.Context, path string) {
	defer v.report.apply(time.Now())
	err := v.reconcilePath(ctx, path)
	// A decision made stale by a scan that ran while it was being prepared
	// is made again at once, on the state that scan left.
	for try := 1; errors.Is(err, errDecisionStale) && try < staleRetries && ctx.Err() == nil; try++ {
		err = v.reconcilePath(ctx, path)
	}
	if err != nil {
		v.unsettled(ctx, path, err)
		return
	}
	v.mu.Lock()
	v.settledLocked(path)
	v.mu.Unlock()
}

// unsettled is unsettledLocked, and logs and publishes err when it is one
// a user should hear of (not while the vault is stopping).
func (v *vault) unsettled(ctx context.Context, path string, err error) {
	v.mu.Lock()
	report := v.unsettledLocked(path, err)
	v.mu.Unlock()
	if report && ctx.Err() == nil {
		v.log.Warn("applying", "path", path, "err", err)
		v.n.events.Publish(api.Event{Type: api.EventError, Folder: v.cfg.Folder, Path: path, Error: err.Error()})
	}
}

// unsettledLocked records that path's decision was not carried out: the
// path stays dirty for the next pass, and err becomes its error unless the
// path only waits (for history, after a stale decision, or for the home
// disk, which is the folder's error home-disk-full, homefull.go). It
// reports whether err is one to log and publish: not a wait, and not a
// local change found at write time (the path is scanned and decided
// again). Both apply paths end here when they fail. v.mu must be held.
func (v *vault) unsettledLocked(path string, err error) (report bool) {
	waiting := errors.Is(err, errWaitingForHistory) || errors.Is(err, errDecisionStale) || errors.Is(err, errHomeFull)
	v.eng.Step(engine.Failed{Path: path, Err: err, Waiting: waiting})
	return !waiting && !errors.Is(err, folder.ErrLocalChange)
}

// conflictCopy is one conflict copy of a decision, as node/ carries it out.
type conflictCopy struct {
	ver entry.Version // the loser's body, with Path set to the copy's name
	// existing is set when the name already holds this content in the
	// graph (protocol.ConflictCopy.Exists): the ID of a head there with
	// it. The copy is written to disk if missing, under that ID, and no
	// new version is recorded for it.
	existing entry.VersionID
}

// reconcilePath decides one path and carries the decision out alone.
func (v *vault) reconcilePath(ctx context.Context, path string) error {
	if err := v.repairPieces(ctx, path); err != nil { // pieces.go
		return err
	}
	v.mu.Lock()
	d, ok, err := v.decideLocked(path)
	v.mu.Unlock()
	if !ok || err != nil {
		return err
	}
	return v.carryOut(ctx, d)
}

// decided is one path's decision as the vault carries it out: what the
// engine decided, the state it was decided from (the stamp, and the index
// record at the path), and the bodies it writes (inline contents not yet
// read back, inline.go).
type decided struct {
	path   string
	dec    protocol.Decision
	stamp  decisionStamp
	winner entry.Version
	copies []conflictCopy
	cur    vaultdb.Record
	had    bool
}

// decideLocked decides path: the one place both apply paths (carryOut, one
// path at a time, and the small-file batch) get their decisions from. ok
// is false when the path has no heads (nothing to do); the error is
// errWaitingForHistory while its heads wait for versions they supersede
// (engine.AwaitsHistory, engine.WaitOver). v.mu must be held.
func (v *vault) decideLocked(path string) (d decided, ok bool, err error) {
	v.eng.Tick(v.n.now())
	dd, err := v.eng.Decide(path, guardIndex{v})
	switch {
	case err != nil:
		return decided{}, true, fmt.Errorf("resolving: %w", err)
	case dd.Act == engine.ActNothing:
		return decided{}, false, nil
	case dd.Act == engine.ActWait:
		return decided{}, true, errWaitingForHistory
	}
	dec := dd.Decision
	d = decided{path: path, dec: dec, stamp: v.stampLocked(decisionPaths(path, dec)...)}
	d.winner, _ = v.view.Body(dec.Winner.ID)
	d.cur, d.had = v.index.Get(path)
	d.copies = make([]conflictCopy, len(dec.Copies))
	for i, c := range dec.Copies {
		d.copies[i].ver, _ = v.view.Body(c.Version.ID)
		d.copies[i].ver.Path = c.Path
		if c.Exists {
			d.copies[i].existing, _ = engine.SameContentHead(v.view.Graph, c.Path, c.Version)
		}
	}
	return d, true, nil
}

// batchable reports whether d may be carried out in a batch of small files
// (applySmallFiles): it writes its winner only (engine.WritesWinnerOnly),
// the winner is a file whose content its entry carries, and the folder
// does not hold that content yet (else only the index changes, which
// carryOut does without writing).
func (d *decided) batchable() bool {
	id := d.dec.Winner.ID
	return engine.WritesWinnerOnly(d.dec) && d.winner.Kind == entry.KindFile && len(d.winner.Chunks) == 0 &&
		!(d.had && (d.cur.Version == id || d.cur.Hash == d.winner.Hash))
}

// carryOut carries one decision out on its own.
//
// Order matters for safety: conflict copies are written first, while the
// file at the path still holds whatever they may need to be re-created
// from; the winner replaces the path last; the index records and the entry
// that records the resolution commit together after both. Scans are held
// off while this happens, so the watcher never mistakes these writes for
// local edits.
func (v *vault) carryOut(ctx context.Context, d decided) error {
	path, dec, winner, copies := d.path, d.dec, d.winner, d.copies
	v.decidedHook(path)
	// Inline contents are not kept in bodies (inline.go).
	var err error
	if winner, err = v.withInline(dec.Winner.ID, winner); err != nil {
		return err
	}
	for i, c := range dec.Copies {
		p := copies[i].ver.Path
		if copies[i].ver, err = v.withInline(c.Version.ID, copies[i].ver); err != nil {
			return err
		}
		copies[i].ver.Path = p
	}

	winnerID := dec.Winner.ID
	var merged []byte
	if dec.Outcome == protocol.OutcomeMerge {
		m, clean, err := v.merge(ctx, path, dec.Merge)
		if err != nil && !errors.Is(err, protocol.ErrNotText) && !errors.Is(err, protocol.ErrMergeTooLarge) {
			// Typically the common ancestor's content is no longer held by
			// any reachable device. Fall back to the decision's winner and
			// conflict copies: nothing is lost, and a device that could
			// merge records a resolution that the next decision settles.
			v.log.Info("merge not possible; keeping both versions", "path", path, "err", err)
		}
		if err == nil && clean {
			merged = m
			copies = nil
		}
	}

	v.scanMu.Lock()
	// The decision was made without the scan lock (the merge above may
	// fetch from peers). A scan in between may have recorded a local edit
	// of the path: the index then describes that edit, so the applier's
	// "unchanged since the last scan" check would pass and the edit would
	// be overwritten by a decision that never saw it. Decide again instead.
	if !v.stampStill(d.stamp) {
		v.scanMu.Unlock()
		return fmt.Errorf("%s: %w", path, errDecisionStale)
	}
	rec, copyRecs, err := v.writeDecision(ctx, path, winnerID, winner, merged, copies)
	if err == nil {
		err = v.recordDecision(path, dec, winner, merged, rec, copies, copyRecs)
	}
	v.scanMu.Unlock()
	if errors.Is(err, folder.ErrLocalChange) {
		// The local file changed since it was scanned: record that edit
		// first; it becomes a head and the path is decided again.
		if _, serr := v.scan(ctx, []string{path}); serr != nil {
			return serr
		}
	}
	return err
}

// errWaitingForHistory keeps a path pending while versions its heads
// supersede are still on their way.
var errWaitingForHistory = errors.New("waiting for earlier versions of this path to arrive")

// errDecisionStale reports that the heads or the index record of a path
// changed between deciding it and taking the scan lock to carry the
// decision out; the path is decided again.
var errDecisionStale = errors.New("decision outdated by a concurrent scan")

// staleRetries bounds how often reconcileOne decides a path again at once
// when its decision went stale; past it the path stays dirty for the next
// round.
const staleRetries = 3

// decisionStamp is what a decision was made from: the heads of every path
// it writes and the index records there. A decision may be carried out
// only while its stamp still holds (checked with v.scanMu held, so no scan
// can record a local edit between the check and the write).
type decisionStamp struct {
	paths []string
	heads [][]protocol.VersionID
	index []vaultdb.Record
	had   []bool
}

// decisionPaths lists the paths a decision writes: the path and its
// conflict copies.
func decisionPaths(path string, dec protocol.Decision) []string {
	out := []string{path}
	for _, c := range dec.Copies {
		out = append(out, c.Path)
	}
	return out
}

// stampLocked records the current heads and index records of paths.
// v.mu must be held.
func (v *vault) stampLocked(paths ...string) decisionStamp {
	s := decisionStamp{paths: paths}
	for _, p := range paths {
		var ids []protocol.VersionID
		for _, h := range v.view.Graph.Heads(p) {
			ids = append(ids, h.ID)
		}
		rec, had := v.index.Get(p)
		s.heads = append(s.heads, ids)
		s.index = append(s.index, rec)
		s.had = append(s.had, had)
	}
	return s
}

// stampStill reports whether the heads and index records s recorded are
// still current. v.mu must not be held; v.scanMu should be.
func (v *vault) stampStill(s decisionStamp) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.stampLocked(s.paths...)
	for i := range s.paths {
		if !slices.Equal(s.heads[i], now.heads[i]) || s.had[i] != now.had[i] ||
			(s.had[i] && !sameRecord(s.index[i], now.index[i])) {
			return false
		}
	}
	return true
}

// decidedHook runs v.onDecided, if a test set it: after a path's decision
// is made and before the scan lock is taken to carry it out, the window in
// which a concurrent scan can make the decision stale.
func (v *vault) decidedHook(path string) {
	if f := v.onDecided.Load(); f != nil {
		(*f)(path)
	}
}

// writeDecision writes the conflict copies, then the winner (or the merged
// text), and returns their index records. A copy that already exists in
// the graph is written only if the disk lacks it (applyVersion leaves equal
// content alone), under the existing version's ID. v.scanMu must be held.
func (v *vault) writeDecision(ctx context.Context, path string, winnerID entry.VersionID, winner entry.Version, merged []byte, copies []conflictCopy) (vaultdb.Record, []vaultdb.Record, error) {
	var copyRecs []vaultdb.Record
	for _, c := range copies {
		v.mu.Lock()
		cur, had := v.index.Get(c.ver.Path)
		v.mu.Unlock()
		r, err := v.applyVersion(ctx, c.existing, c.ver, cur, had)
		if err != nil {
			return vaultdb.Record{}, nil, fmt.Errorf("writing conflict copy %s: %w", c.ver.Path, err)
		}
		copyRecs = append(copyRecs, r)
		if c.existing == (entry.VersionID{}) {
			v.log.Warn("conflict: both versions kept, the other one in a conflict copy (`weft conflicts`, `weft resolve`)", "path", path, "copy", c.ver.Path)
			v.n.events.Publish(api.Event{Type: api.EventConflict, Folder: v.cfg.Folder, Path: c.ver.Path})
		}
	}
	v.mu.Lock()
	cur, had := v.index.Get(path)
	v.mu.Unlock()
	switch {
	case merged != nil:
		rec, err := v.writeBytes(ctx, path, winner, merged, cur, had)
		return rec, copyRecs, err
	case had && cur.Version == winnerID:
		return cur, copyRecs, nil
	default:
		rec, err := v.applyVersion(ctx, winnerID, winner, cur, had)
		return rec, copyRecs, err
	}
}

// recordDecision commits what writeDecision wrote: the index alone for a
// single head or identical contents, else one entry that supersedes every
// head (and adds one version per conflict copy not already in the graph)
// together with the index. v.scanMu must be held.
func (v *vault) recordDecision(path string, dec protocol.Decision, winner entry.Version, merged []byte, rec vaultdb.Record, copies []conflictCopy, copyRecs []vaultdb.Record) error {
	if !engine.RecordsResolution(dec) {
		return v.commitIndex(indexed{path, rec})
	}
	written := winner
	if merged != nil {
		written.Size, written.Hash, written.Inline, written.Chunks = rec.Size, rec.Hash, nil, rec.Chunks
		if len(rec.Chunks) == 0 {
			written.Inline = merged
		}
		written.MTime = rec.MTime
	}
	paths := []string{path}
	records := []vaultdb.Record{rec}
	var fresh []engine.NewCopy
	v.mu.Lock()
	for i, cc := range copies {
		paths = append(paths, cc.ver.Path)
		records = append(records, copyRecs[i])
		if cc.existing != (entry.VersionID{}) {
			continue // already recorded, by this device or another: index only
		}
		// The index still holds what was at the name before the copy.
		cur, had := v.index.Get(cc.ver.Path)
		fresh = append(fresh, engine.NewCopy{Body: cc.ver, Disk: diskOf(cur), Had: had})
	}
	versions := engine.Resolution(v.view.Graph, dec, written, fresh)
	old, had := v.index.Get(path)
	v.mu.Unlock()
	v.authorMu.Lock()
	defer v.authorMu.Unlock()
	if err := v.author(versions, paths, records); err != nil {
		return err
	}
	if merged != nil {
		v.keepMerged(records[0], merged)
	}
	// The winner or the merge is what is at path now (author set its
	// version in records): an editor's save landing right after it was
	// made from what was there before (applyrace.go).
	v.mu.Lock()
	v.noteAppliedLocked(path, old, had, records[0])
	v.mu.Unlock()
	return nil
}

// indexed is one path's new folder index record, as an apply commits it.
type indexed struct {
	path string
	rec  vaultdb.Record // Kind 0: the path holds nothing now
}

// commitIndex records, in one commit, that each path now holds its record
// (records the index already holds are left out), then notes each in
// memory (appliedLocked). A full home disk comes back as errHomeFull.
// Both apply paths commit through it.
func (v *vault) commitIndex(recs ...indexed) error {
	u := &vaultdb.Update{}
	todo := recs[:0:0]
	v.mu.Lock()
	for _, r := range recs {
		old, had := v.index.Get(r.path)
		if had == (r.rec.Kind != 0) && (!had || sameRecord(old, r.rec)) {
			continue
		}
		if r.rec.Kind == 0 {
			u.DeleteIndex(r.path)
		} else {
			u.PutIndex(r.path, r.rec)
		}
		todo = append(todo, r)
	}
	v.mu.Unlock()
	if len(todo) == 0 {
		return nil
	}
	err := v.db.Commit(u)
	v.noteHomeWrite("recording applied files", err) // homefull.go
	if err != nil {
		if homefull.IsDiskFull(err) {
			err = fmt.Errorf("%w: %w", errHomeFull, err)
		}
		if len(todo) == 1 {
			return fmt.Errorf("recording %s in the index: %w", todo[0].path, err)
		}
		return fmt.Errorf("recording %d applied files in the index: %w", len(todo), err)
	}
	v.mu.Lock()
	for _, r := range todo {
		old, had := v.index.Get(r.path)
		v.appliedLocked(r.path, old, had, r.rec)
	}
	v.grewLocked() // what this device holds in full may have grown
	v.mu.Unlock()
	return nil
}

// appliedLocked records in memory that path now holds rec (committed to
// the index by the caller) where it held old (when had): the folder index,
// the applied-version note that tells an editor's save from our write
// (applyrace.go), and the keep of the new version. commitIndex, which both
// apply paths commit through, calls it. v.mu must be held.
func (v *vault) appliedLocked(path string, old vaultdb.Record, had bool, rec vaultdb.Record) {
	v.noteAppliedLocked(path, old, had, rec)
	v.setIndexLocked(path, rec)
	if j, ok := keeper.JobFor(old, had, rec); ok {
		v.keep.Enqueue(j)
	}
}

// settledLocked records that path's decision was carried out: its error
// goes, a repair of it is done, its wait for history (if it had one) is
// over, and one less path is pending. Both apply paths end here; the batch
// path once forgot the wait, so a later wait at the path started from the
// old time and ended at once. v.mu must be held.
func (v *vault) settledLocked(path string) {
	v.eng.Step(engine.Settled{Path: path})
	v.repairedLocked(path)
}

func sameRecord(a, b vaultdb.Record) bool {
	return a.Version == b.Version && a.Kind == b.Kind && a.Size == b.Size && a.MTime == b.MTime &&
		a.Inode == b.Inode && a.Ctime == b.Ctime && a.Mode == b.Mode && a.Hash == b.Hash && a.Target == b.Target
}

// applyVersion makes the disk at ver.Path hold ver and returns the index
// record for it (Kind 0 for a deletion). cur is the index record at the
// path, if had. When the disk already holds the same content, nothing is
// written and only the record's version changes.
func (v *vault) applyVersion(ctx context.Context, id entry.VersionID, ver entry.Version, cur vaultdb.Record, had bool) (vaultdb.Record, error) {
	a := v.applier
	switch ver.Kind {
	case entry.KindDeletion:
		if !had {
			return vaultdb.Record{}, nil
		}
		v.keep.KeepBeforeReplace(cur, had)
		if err := a.Delete(ctx, ver.Path); err != nil {
			return vaultdb.Record{}, err
		}
		v.n.events.Publish(api.Event{Type: api.EventApplied, Folder: v.cfg.Folder, Path: ver.Path, Kind: "deletion"})
		return vaultdb.Record{}, nil
	case entry.KindDir:
		if had && cur.Kind == entry.KindDir {
			cur.Version = id
			return cur, nil
		}
		out, err := a.MakeDir(ctx, ver.Path, fs.FileMode(ver.Mode).Perm()|0o700)
		if err != nil {
			return vaultdb.Record{}, err
		}
		return recordFromInfo(id, ver, out.Info), nil
	case entry.KindSymlink:
		if had && cur.Kind == entry.KindSymlink && cur.Target == ver.Target {
			cur.Version = id
			return cur, nil
		}
		out, err := a.WriteSymlink(ctx, ver.Path, ver.Target)
		if err != nil {
			return vaultdb.Record{}, err
		}
		return recordFromInfo(id, ver, out.Info), nil
	case entry.KindFile:
		if had && cur.Kind == entry.KindFile && cur.Hash == ver.Hash && cur.Mode&0o111 == ver.Mode&0o111 {
			cur.Version = id
			cur.Chunks = ver.Chunks
			return cur, nil
		}
		v.keep.KeepBeforeReplace(cur, had)
		content, stop := v.contentReader(ctx, ver)
		defer stop()
		out, err := a.WriteFile(ctx, folder.FileVersion{
			Path: ver.Path, Size: int64(ver.Size), MTime: ver.MTime, Executable: ver.Mode&0o111 != 0,
		}, content)
		if err != nil {
			return vaultdb.Record{}, err
		}
		v.pending.written.Add(int64(ver.Size))
		v.n.events.Publish(api.Event{Type: api.EventApplied, Folder: v.cfg.Folder, Path: ver.Path, Kind: "file", Bytes: int64(ver.Size)})
		return recordFromInfo(id, ver, out.Info), nil
	}
	return vaultdb.Record{}, fmt.Errorf("version of unknown kind %s", ver.Kind)
}

// writeBytes writes merged text at path; the returned record carries the
// merged content's hash and chunk list.
func (v *vault) writeBytes(ctx context.Context, path string, like entry.Version, b []byte, cur vaultdb.Record, had bool) (vaultdb.Record, error) {
	h, err := chunkHasher{keys: v.crypt.ChunkKeys()}.Hash(ctx, path, bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return vaultdb.Record{}, err
	}
	ver := like
	ver.Path, ver.Size, ver.Hash = path, uint64(len(b)), h.Hash
	x := h.Extra.(hashExtra)
	ver.Inline, ver.Chunks = x.inline, x.chunks
	if had && cur.Kind == entry.KindFile && cur.Hash == ver.Hash {
		return cur, nil
	}
	v.keep.KeepBeforeReplace(cur, had)
	out, err := v.applier.WriteFile(ctx, folder.FileVersion{Path: path, Size: int64(len(b)), MTime: v.n.now().UnixNano(), Executable: ver.Mode&0o111 != 0}, bytes.NewReader(b))
	if err != nil {
		return vaultdb.Record{}, err
	}
	return recordFromInfo(entry.VersionID{}, ver, out.Info), nil
}

// keepMerged copies a merge this device just wrote and recorded (rec,
// whose version author set) into the local version store from the merged
// bytes themselves, before the scan lock is released. Until a peer has
// fetched it, this disk held its only copy, and an editor's save landing
// right after the write replaces that copy while the merge stays a head
// (the save supersedes what was there before the write, applyrace.go):
// the next decision then needs the merge's content. Copied later from the
// folder, as other versions are, it was already gone, and both devices
// retried a conflict copy of it forever (TestTokenRace, seed 2 under
// load; TestSaveRightAfterMergeKeepsTheMerge).
func (v *vault) keepMerged(rec vaultdb.Record, merged []byte) {
	if len(rec.Chunks) == 0 {
		return // inline: the entry carries the bytes
	}
	v.keep.KeepSole(rec.Version, func(c cid.Cid) ([]byte, error) {
		var off int64
		for _, ch := range rec.Chunks {
			end := off + int64(ch.Size)
			if ch.CID.Equals(c) && end <= int64(len(merged)) {
				env, ok, err := v.crypt.SealLocalAppend(nil, c, merged[off:end])
				if err != nil || ok {
					return env, err
				}
			}
			off = end
		}
		return nil, fmt.Errorf("chunk %s: %w", c, errNotLocal)
	})
}

// merge fetches the contents of a merge plan for path and merges them
// with the driver for path's type (protocol.MergeFile).
func (v *vault) merge(ctx context.Context, path string, plan *protocol.MergePlan) ([]byte, bool, error) {
	read := func(id protocol.VersionID) ([]byte, error) {
		v.mu.Lock()
		ver, _ := v.view.Body(id)
		v.mu.Unlock()
		if ver.Size > protocol.MaxMergeBytes {
			return nil, protocol.ErrMergeTooLarge
		}
		ver, err := v.withInline(id, ver) // inline.go
		if err != nil {
			return nil, err
		}
		r, stop := v.contentReader(ctx, ver)
		defer stop()
		return io.ReadAll(r)
	}
	base, err := read(plan.Base.ID)
	if err != nil {
		return nil, false, err
	}
	sides := make([][]byte, len(plan.Sides))
	for i, s := range plan.Sides {
		if sides[i], err = read(s.ID); err != nil {
			return nil, false, err
		}
	}
	return protocol.MergeFile(path, base, sides)
}

// contentReader yields a file version's plaintext in order
// (content.Reader): inline bytes, or its chunks, each re-created from a
// local file when one holds it and fetched from peers otherwise. stop
// releases the producer.
func (v *vault) contentReader(ctx context.Context, ver entry.Version) (io.Reader, func()) {
	return content.Reader(ctx, chunkSources{v}, ver)
}

// chunkSources are where the vault's chunks come from, as content reads
// them: its own files and version store, and its connected peers.
type chunkSources struct{ v *vault }

func (s chunkSources) Local(buf []byte, c cid.Cid) ([]byte, error) {
	return s.v.local.plaintextInto(buf, c)
}

func (s chunkSources) Fetch(ctx context.Context, cids []cid.Cid, got func(cid.Cid, []byte) error) error {
	return s.v.fetchFromPeersLent(ctx, cids, got)
}

func (s chunkSources) Open(buf []byte, c cid.Cid, env []byte) ([]byte, error) {
	return s.v.crypt.OpenVerifiedChunk(buf, c, env)
}

func (s chunkSources) Pending(d int) { s.v.addPendingFetch(d) }

func (v *vault) addPendingFetch(d int) {
	v.mu.Lock()
	v.pending.toFetch = max(0, v.pending.toFetch+d)
	v.mu.Unlock()
}

// fetchFromPeers fetches cids from the connected members. With several
// members connected the want-list is split across them and fetched in
// parallel; whatever one peer lacks (or fails to send) is then asked of
// the others in turn. got is called for every verified envelope, from
// several goroutines at once, and must be safe for that.
func (v *vault) fetchFromPeers(ctx context.Context, cids []cid.Cid, got func(cid.Cid, []byte) error) error {
	return v.fetchFrom(ctx, cids, false, got)
}

// fetchFromPeersLent is fetchFromPeers with each envelope lent to got:
// valid only until got returns (netsync.FetchChunksLent), so got copies
// what it keeps.
func (v *vault) fetchFromPeersLent(ctx context.Context, cids []cid.Cid, got func(cid.Cid, []byte) error) error {
	return v.fetchFrom(ctx, cids, true, got)
}

// fetchFrom is fetchFromPeers, with envelopes lent to got if lent: the
// connected members and relays share the want-list (content.Spread).
func (v *vault) fetchFrom(ctx context.Context, cids []cid.Cid, lent bool, got func(cid.Cid, []byte) error) error {
	var peers []content.Peer
	for _, p := range v.n.connectedMembers(v) {
		peers = append(peers, content.Peer{Name: p.dev.Short(), Fetch: func(ctx context.Context, cids []cid.Cid) ([]cid.Cid, error) {
			return v.fetchChunks(ctx, p.id, p.dev, cids, lent, got)
		}})
	}
	return content.Spread(ctx, peers, cids)
}

// readAt fills buf from offset off of f, using ReadAt when the file offers
// it and skipping forward otherwise.
func readAt(f folder.File, buf []byte, off int64) error {
	if ra, ok := f.(io.ReaderAt); ok {
		_, err := ra.ReadAt(buf, off)
		return err
	}
	if s, ok := f.(io.Seeker); ok {
		if _, err := s.Seek(off, io.SeekStart); err != nil {
			return err
		}
	} else if _, err := io.CopyN(io.Discard, f, off); err != nil {
		return err
	}
	_, err := io.ReadFull(f, buf)
	return err
}
