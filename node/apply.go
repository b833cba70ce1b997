package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/carry"
	"github.com/weftsync/weft/node/content"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/homefull"
	"github.com/weftsync/weft/node/keeper"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// reconcileRetry is how often the reconcile loop runs a pass unasked
// while something is dirty: paths whose apply failed are retried, and
// waits for history end.
const reconcileRetry = 2 * time.Second

// reconcileIdle is how often it looks unasked while nothing is dirty.
// Every change that needs a pass kicks the vault, so this is only a net
// under a missed kick; ticking every reconcileRetry woke an idle agent 30
// times a minute for nothing (issue 16's idle CPU).
const reconcileIdle = 30 * time.Second

// reconcileLoop is the vault's one reconcile goroutine (Run owns it,
// startVault): once the temp files of an earlier run are removed, it runs
// a pass whenever the vault is kicked, every reconcileRetry while
// something is dirty and every reconcileIdle otherwise. Only this
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
	wait := time.NewTimer(reconcileRetry)
	defer wait.Stop()
	for {
		dirty, may := v.mayReconcile()
		if may {
			v.reconcile(ctx)
		}
		next := reconcileIdle
		if dirty {
			next = reconcileRetry // what the pass left, or what waits for the home disk or the log
		}
		wait.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-v.kicked:
		case <-wait.C:
		}
	}
}

// mayReconcile reports whether something is dirty, and whether a pass
// should run now: something is dirty, the home disk has room (retryHome
// kicks once it has, homefull.go), and this device's log is known whole
// and the folder rescanned (logtail.go: an apply could otherwise meet a
// local edit not yet recorded).
func (v *vault) mayReconcile() (dirty, may bool) {
	v.engine.Do(func(e *engine.Engine) { dirty = e.HasReady() })
	return dirty, dirty && !v.home.Full() && !v.tail.ReconcileHeld()
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
	var rd engine.Ready
	v.engine.Do(func(e *engine.Engine) {
		v.mu.Lock()
		defer v.mu.Unlock()
		e.Tick(v.n.now())
		rd = e.Ready(guardIndex{v})
		v.pending.passBytes = engine.BytesToWrite(v.view.Graph, slices.Concat(rd.Adds, rd.AfterDeletions), func(p string) (protocol.VersionID, bool) {
			rec, ok := v.index.Get(p)
			return rec.Version, ok
		})
		v.pending.written.Store(0)
	})
	v.noteIncomingHold(rd.Guard)
	adds := v.applySmallFiles(ctx, rd.Adds)
	for _, batch := range [][]string{adds, rd.Deletions, rd.AfterDeletions} {
		for _, p := range batch {
			if ctx.Err() != nil {
				// Not carried out: dirty again, for the next run.
				v.engine.Post(func(e *engine.Engine) { e.Step(engine.Failed{Path: p, Waiting: true}) })
				continue
			}
			v.reconcileOne(ctx, p)
		}
	}
	v.engine.Post(func(e *engine.Engine) { e.Advance(rd) })
	v.mu.Lock()
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
	v.engine.Post(func(e *engine.Engine) { e.Step(engine.Failed{Path: path, Err: err, Waiting: waiting}) })
	return !waiting && !errors.Is(err, folder.ErrLocalChange)
}

// reconcilePath decides one path and carries the decision out alone.
func (v *vault) reconcilePath(ctx context.Context, path string) error {
	if err := v.repairPieces(ctx, path); err != nil { // pieces.go
		return err
	}
	d, ok, err := v.decide(path)
	if !ok || err != nil {
		return err
	}
	return carry.Out(ctx, carrySide{v}, d)
}

// decide is decideLocked, run by the engine's loop with v.mu held.
func (v *vault) decide(path string) (d carry.Decided, ok bool, err error) {
	v.engine.Do(func(e *engine.Engine) {
		v.mu.Lock()
		defer v.mu.Unlock()
		d, ok, err = v.decideLocked(e, path)
	})
	return d, ok, err
}

// decision is one path's outcome of decideLocked.
type decision struct {
	d   carry.Decided
	ok  bool
	err error
}

// decideAll is decide for each of paths, in one piece of the loop's work
// (a batch of small files asks once, not once a file).
func (v *vault) decideAll(paths []string) []decision {
	out := make([]decision, len(paths))
	v.engine.Do(func(e *engine.Engine) {
		v.mu.Lock()
		defer v.mu.Unlock()
		for i, p := range paths {
			out[i].d, out[i].ok, out[i].err = v.decideLocked(e, p)
		}
	})
	return out
}

// decideLocked decides path: the one place both apply paths (carry.Out, one
// path at a time, and the small-file batch) get their decisions from. ok
// is false when the path has no heads (nothing to do); the error is
// errWaitingForHistory while its heads wait for versions they supersede
// (engine.AwaitsHistory, engine.WaitOver). v.mu must be held.
func (v *vault) decideLocked(e *engine.Engine, path string) (d carry.Decided, ok bool, err error) {
	e.Tick(v.n.now())
	dd, err := e.Decide(path, guardIndex{v})
	switch {
	case err != nil:
		return carry.Decided{}, true, fmt.Errorf("resolving: %w", err)
	case dd.Act == engine.ActNothing:
		return carry.Decided{}, false, nil
	case dd.Act == engine.ActWait:
		return carry.Decided{}, true, errWaitingForHistory
	}
	dec := dd.Decision
	stamp := v.stampLocked(decisionPaths(path, dec)...)
	d = carry.Decided{Path: path, Dec: dec, Still: func() bool { return v.stampStill(stamp) }}
	d.Winner, _ = v.view.Body(dec.Winner.ID)
	d.Cur, d.Had = v.index.Get(path)
	d.Copies = make([]carry.Copy, len(dec.Copies))
	for i, c := range dec.Copies {
		d.Copies[i].Ver, _ = v.view.Body(c.Version.ID)
		d.Copies[i].Ver.Path = c.Path
		if c.Exists {
			d.Copies[i].Existing, _ = engine.SameContentHead(v.view.Graph, c.Path, c.Version)
		}
	}
	return d, true, nil
}

// errWaitingForHistory keeps a path pending while versions its heads
// supersede are still on their way.
var errWaitingForHistory = errors.New("waiting for earlier versions of this path to arrive")

// errDecisionStale reports that the heads or the index record of a path
// changed between deciding it and taking the scan lock to carry the
// decision out; the path is decided again.
var errDecisionStale = carry.ErrDecisionStale

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
	notes := make([]appliedNote, 0, len(todo))
	for _, r := range todo {
		old, had := v.index.Get(r.path)
		notes = append(notes, v.appliedLocked(r.path, old, had, r.rec))
	}
	v.postApplied(notes...)
	v.grewLocked() // what this device holds in full may have grown
	v.mu.Unlock()
	return nil
}

// appliedLocked records in memory that path now holds rec (committed to
// the index by the caller) where it held old (when had): the folder index,
// the applied-version note that tells an editor's save from our write
// (applyrace.go: returned, for the caller to post with the others of its
// commit), and the keep of the new version. commitIndex, which both apply
// paths commit through, calls it. v.mu must be held.
func (v *vault) appliedLocked(path string, old vaultdb.Record, had bool, rec vaultdb.Record) appliedNote {
	note := v.appliedNoteLocked(path, old, had, rec)
	v.setIndexLocked(path, rec)
	if j, ok := keeper.JobFor(old, had, rec); ok {
		v.keep.Enqueue(j)
	}
	return note
}

// settledLocked records that path's decision was carried out: its error
// goes, a repair of it is done, its wait for history (if it had one) is
// over, and one less path is pending. Both apply paths end here; the batch
// path once forgot the wait, so a later wait at the path started from the
// old time and ended at once. v.mu must be held.
func (v *vault) settledLocked(paths ...string) {
	v.engine.Post(func(e *engine.Engine) {
		for _, p := range paths {
			e.Step(engine.Settled{Path: p})
		}
	})
	for _, p := range paths {
		v.repairedLocked(p)
	}
}

func sameRecord(a, b vaultdb.Record) bool {
	return a.Version == b.Version && a.Kind == b.Kind && a.Size == b.Size && a.MTime == b.MTime &&
		a.Inode == b.Inode && a.Ctime == b.Ctime && a.Mode == b.Mode && a.Hash == b.Hash && a.Target == b.Target
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
	return s.v.local.PlaintextInto(buf, c)
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
