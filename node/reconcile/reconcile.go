package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/weftsync/weft/node/carry"
	"github.com/weftsync/weft/node/engineloop"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/homefull"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// Retry is how often the loop runs a pass unasked while something is
// dirty: paths whose apply failed are retried, and waits for history end.
const Retry = 2 * time.Second

// Idle is how often the loop looks unasked while nothing is dirty. Every
// change that needs a pass kicks the loop, so this is only a net under a
// missed kick; ticking every Retry woke an idle agent 30 times a minute
// for nothing (issue 16's idle CPU).
const Idle = 30 * time.Second

// staleRetries bounds how often a path whose decision went stale is
// decided again at once; past it the path stays dirty for the next pass.
const staleRetries = 3

// ErrWaitingForHistory keeps a path pending while versions its heads
// supersede are still on their way.
var ErrWaitingForHistory = errors.New("waiting for earlier versions of this path to arrive")

// State is the vault's state a decision is made from. Its methods are
// valid only inside Vault.Locked, with the vault's lock held.
type State interface {
	Graph() *protocol.Graph
	// Body is version id's body as the vault holds it (its inline bytes
	// may have to be read back: carry.Vault.WithInline).
	Body(id protocol.VersionID) (entry.Version, bool)
	// Record is the folder index's record at path.
	Record(path string) (vaultdb.Record, bool)
	// View is the graph and index as the engine reads them.
	View() engine.View
	// PassBytes sets the bytes the current pass has to write (status's
	// estimate; 0 when no pass runs) and starts counting what it wrote
	// (carry.Vault.Wrote) from 0 again.
	PassBytes(n int64)
	// Settled does the vault's own bookkeeping for paths carried out (a
	// repair of a damaged file is over).
	Settled(paths ...string)
}

// Indexed is one path's new folder index record, as an apply commits it.
type Indexed struct {
	Path string
	Rec  vaultdb.Record // Kind 0: the path holds nothing now
}

// Vault is what a pass needs of the vault: what carrying one decision out
// needs (carry.Vault), its state under its lock, and the checks and
// records around a pass.
type Vault interface {
	carry.Vault
	// Locked runs f with the vault's lock held.
	Locked(f func(State))
	// Stopped reports whether the folder may not be written now (the
	// folder guard, node/folderguard).
	Stopped() bool
	// Held reports whether passes wait: the home disk is full, or this
	// device's own log is not known whole yet.
	Held() bool
	// RepairPieces makes path's heads' chunk lists whole before it is
	// decided (node/pieces).
	RepairPieces(ctx context.Context, path string) error
	// CommitIndexes records, in one commit, that each path now holds its
	// record, and notes each apply. A full home disk comes back wrapping
	// homefull.ErrFull.
	CommitIndexes(recs ...Indexed) error
	// IncomingHeld tells the user when a pass began holding incoming
	// deletions.
	IncomingHeld(engine.IncomingVerdict)
	// Unsettled logs and publishes a path's failure a user should hear of.
	Unsettled(path string, err error)
	// Took reports how long one path's carry-out took.
	Took(start time.Time)
	// Reconciled reports that a pass ended.
	Reconciled()
}

// Reconciler runs a vault's reconcile passes: it asks the engine's loop
// for each pass and each decision, and carries them out, small files in
// batches and the rest one at a time through node/carry. Only its Run
// goroutine runs passes, so one vault's slow apply (a large file fetched)
// holds up no other vault.
type Reconciler struct {
	v      Vault
	loop   *engineloop.Loop
	kicked <-chan struct{}
}

// New returns the reconciler of a vault whose engine loop is loop; a
// receive from kicked asks for a pass (the vault sends without waiting on
// a channel of buffer 1: a kick already queued starts a pass that takes
// every dirty path).
func New(v Vault, loop *engineloop.Loop, kicked <-chan struct{}) *Reconciler {
	return &Reconciler{v: v, loop: loop, kicked: kicked}
}

// Run runs a pass whenever the vault is kicked, every Retry while
// something is dirty and every Idle otherwise, once ready is closed (the
// temp files of an earlier run are removed: applying before could have
// one of its own removed too). It returns when ctx ends; its caller owns
// it.
func (r *Reconciler) Run(ctx context.Context, ready <-chan struct{}) {
	select {
	case <-ctx.Done():
		return
	case <-ready:
	}
	wait := time.NewTimer(Retry)
	defer wait.Stop()
	for {
		dirty, may := r.may()
		if may {
			r.Pass(ctx)
		}
		next := Idle
		if dirty {
			next = Retry // what the pass left, or what waits for the home disk or the log
		}
		wait.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-r.kicked:
		case <-wait.C:
		}
	}
}

// may reports whether something is dirty, and whether a pass should run
// now: something is dirty and the vault does not hold passes (Held).
func (r *Reconciler) may() (dirty, may bool) {
	r.loop.Do(func(e *engine.Engine) { dirty = e.HasReady() })
	return dirty, dirty && !r.v.Held()
}

// Pass brings every dirty path of the vault to what the engine decides.
// Paths whose apply fails stay dirty and are retried on the next kick or
// tick.
func (r *Reconciler) Pass(ctx context.Context) {
	if r.v.Stopped() {
		return // dirty paths wait until the folder is back
	}
	// The engine takes every dirty path into one pass, in the order of
	// engine.Order (non-deletions parents first, then deletions children
	// first, then names a deletion frees), without the deletions the
	// mass-delete guard holds.
	var rd engine.Ready
	r.loop.Do(func(e *engine.Engine) {
		r.v.Locked(func(s State) {
			e.Tick(r.v.Now())
			rd = e.Ready(s.View())
			s.PassBytes(engine.BytesToWrite(s.Graph(), slices.Concat(rd.Adds, rd.AfterDeletions), func(p string) (protocol.VersionID, bool) {
				rec, ok := s.Record(p)
				return rec.Version, ok
			}))
		})
	})
	r.v.IncomingHeld(rd.Guard)
	adds := r.smallFiles(ctx, rd.Adds)
	for _, batch := range [][]string{adds, rd.Deletions, rd.AfterDeletions} {
		for _, p := range batch {
			if ctx.Err() != nil {
				// Not carried out: dirty again, for the next run.
				r.loop.Post(func(e *engine.Engine) { e.Step(engine.Failed{Path: p, Waiting: true}) })
				continue
			}
			r.one(ctx, p)
		}
	}
	r.loop.Post(func(e *engine.Engine) { e.Advance(rd) })
	r.v.Locked(func(s State) { s.PassBytes(0) })
	r.v.Reconciled()
}

// one decides path and carries the decision out alone; a decision made
// stale by a scan that ran while it was being prepared is made again at
// once, on the state that scan left.
func (r *Reconciler) one(ctx context.Context, path string) {
	defer r.v.Took(time.Now())
	err := r.Path(ctx, path)
	for try := 1; errors.Is(err, carry.ErrDecisionStale) && try < staleRetries && ctx.Err() == nil; try++ {
		err = r.Path(ctx, path)
	}
	if err != nil {
		r.unsettled(ctx, path, err)
		return
	}
	r.settled(path)
}

// Path decides one path and carries the decision out alone, recording
// nothing of the outcome in the engine (Pass does).
func (r *Reconciler) Path(ctx context.Context, path string) error {
	if err := r.v.RepairPieces(ctx, path); err != nil {
		return err
	}
	d, ok, err := r.decide(path)
	if !ok || err != nil {
		return err
	}
	return carry.Out(ctx, r.v, d)
}

// unsettled records that path's decision was not carried out: the path
// stays dirty for the next pass, and err becomes its error unless the
// path only waits (for history, after a stale decision, or for the home
// disk, which is the folder's error). The vault logs and publishes err
// when a user should hear of it: not a wait, not a local change found at
// write time (the path is scanned and decided again), not while the vault
// stops. Both apply paths end here when they fail.
func (r *Reconciler) unsettled(ctx context.Context, path string, err error) {
	if r.fail(path, err) && ctx.Err() == nil {
		r.v.Unsettled(path, err)
	}
}

// fail posts path's failure to the engine and reports whether it is one
// to tell the user of.
func (r *Reconciler) fail(path string, err error) (report bool) {
	waiting := errors.Is(err, ErrWaitingForHistory) || errors.Is(err, carry.ErrDecisionStale) || errors.Is(err, homefull.ErrFull)
	// Posted under the vault's lock, as the touches of versions folded in
	// are, so the engine sees the two in the order they happened.
	r.v.Locked(func(State) {
		r.loop.Post(func(e *engine.Engine) { e.Step(engine.Failed{Path: path, Err: err, Waiting: waiting}) })
	})
	return !waiting && !errors.Is(err, folder.ErrLocalChange)
}

// settled records that paths' decisions were carried out: each one's
// error goes, its wait for history (if it had one) is over, one less path
// is pending, and the vault's own bookkeeping is done. Both apply paths
// end here; the batch path once forgot the wait, so a later wait at the
// path started from the old time and ended at once.
func (r *Reconciler) settled(paths ...string) {
	r.v.Locked(func(s State) {
		r.loop.Post(func(e *engine.Engine) {
			for _, p := range paths {
				e.Step(engine.Settled{Path: p})
			}
		})
		s.Settled(paths...)
	})
}

// decision is one path's outcome of decideLocked.
type decision struct {
	d   carry.Decided
	ok  bool
	err error
}

// decide is decideLocked, run by the engine's loop with the vault's lock
// held.
func (r *Reconciler) decide(path string) (d carry.Decided, ok bool, err error) {
	r.loop.Do(func(e *engine.Engine) {
		r.v.Locked(func(s State) { d, ok, err = r.decideLocked(e, s, path) })
	})
	return d, ok, err
}

// decideAll is decide for each of paths, in one piece of the loop's work
// (a batch of small files asks once, not once a file).
func (r *Reconciler) decideAll(paths []string) []decision {
	out := make([]decision, len(paths))
	r.loop.Do(func(e *engine.Engine) {
		r.v.Locked(func(s State) {
			for i, p := range paths {
				out[i].d, out[i].ok, out[i].err = r.decideLocked(e, s, p)
			}
		})
	})
	return out
}

// decideLocked decides path: the one place both apply paths (carry.Out,
// one path at a time, and the small-file batch) get their decisions from.
// ok is false when the path has no heads (nothing to do); the error is
// ErrWaitingForHistory while its heads wait for versions they supersede
// (engine.AwaitsHistory, engine.WaitOver).
func (r *Reconciler) decideLocked(e *engine.Engine, s State, path string) (d carry.Decided, ok bool, err error) {
	e.Tick(r.v.Now())
	dd, err := e.Decide(path, s.View())
	switch {
	case err != nil:
		return carry.Decided{}, true, fmt.Errorf("resolving: %w", err)
	case dd.Act == engine.ActNothing:
		return carry.Decided{}, false, nil
	case dd.Act == engine.ActWait:
		return carry.Decided{}, true, ErrWaitingForHistory
	}
	dec := dd.Decision
	st := stampOf(s, decisionPaths(path, dec)...)
	d = carry.Decided{Path: path, Dec: dec, Still: func() bool { return r.still(st) }}
	d.Winner, _ = s.Body(dec.Winner.ID)
	d.Cur, d.Had = s.Record(path)
	d.Copies = make([]carry.Copy, len(dec.Copies))
	for i, c := range dec.Copies {
		d.Copies[i].Ver, _ = s.Body(c.Version.ID)
		d.Copies[i].Ver.Path = c.Path
		if c.Exists {
			d.Copies[i].Existing, _ = engine.SameContentHead(s.Graph(), c.Path, c.Version)
		}
	}
	return d, true, nil
}

// stamp is what a decision was made from: the heads of every path it
// writes and the index records there. A decision may be carried out only
// while its stamp still holds (checked with scans held, so no scan can
// record a local edit between the check and the write).
type stamp struct {
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

// stampOf records the current heads and index records of paths.
func stampOf(s State, paths ...string) stamp {
	st := stamp{paths: paths}
	for _, p := range paths {
		var ids []protocol.VersionID
		for _, h := range s.Graph().Heads(p) {
			ids = append(ids, h.ID)
		}
		rec, had := s.Record(p)
		st.heads = append(st.heads, ids)
		st.index = append(st.index, rec)
		st.had = append(st.had, had)
	}
	return st
}

// still reports whether the heads and index records st recorded are still
// current. The vault's lock must not be held; scans should be.
func (r *Reconciler) still(st stamp) bool {
	same := true
	r.v.Locked(func(s State) {
		now := stampOf(s, st.paths...)
		for i := range st.paths {
			if !slices.Equal(st.heads[i], now.heads[i]) || st.had[i] != now.had[i] ||
				(st.had[i] && !SameRecord(st.index[i], now.index[i])) {
				same = false
				return
			}
		}
	})
	return same
}

// SameRecord reports whether two index records describe the same file as
// scanned (the version and every stat and content field).
func SameRecord(a, b vaultdb.Record) bool {
	return a.Version == b.Version && a.Kind == b.Kind && a.Size == b.Size && a.MTime == b.MTime &&
		a.Inode == b.Inode && a.Ctime == b.Ctime && a.Mode == b.Mode && a.Hash == b.Hash && a.Target == b.Target
}
