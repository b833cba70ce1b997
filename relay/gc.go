package relay

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/pack"
)

// DefaultGCInterval is how often a relay collects each vault's garbage
// unless configured otherwise. Retention is measured in days, so an hour
// late costs little; a large change starts a collection sooner.
const DefaultGCInterval = time.Hour

// gcAfterSuperseded is how many versions superseded since a vault's last
// collection start the next one at once (a large change: a folder
// rewritten, a restore --all).
const gcAfterSuperseded = 10_000

// rewriteOnlyGrace is a GC grace so long that no chunk is old enough to be
// dropped: the second pass of a collection only rewrites packs.
const rewriteOnlyGrace = 100 * 365 * 24 * time.Hour

// gcResult reports one collection of one vault.
type gcResult struct {
	Entries  int       // entries scanned
	Plan     planStats // stored versions by retention outcome
	Live     int       // distinct chunks and pieces kept live
	Pieces   int       // of which pieces (their chunks are live with them)
	Unwanted int       // chunks no longer fetched: no retained version references them

	Dropped           int   // chunks reclaimed
	DroppedBytes      int64 // their bytes
	PacksRewritten    int
	BytesOnDiskBefore int64
	BytesOnDiskAfter  int64
}

// collect reclaims the chunks of vault r that no retained version
// references, deciding retention at now under pol.
//
// Never collected: a chunk referenced by a version retained under pol
// (every current head among them), by any version of an entry beyond its
// author's held prefix, or by an entry stored while collect runs; a chunk
// still wanted for any of those; and, through store/pack's grace, a chunk
// stored less than r.gcGrace ago. A piece a version names counts as
// referenced by it, and so does every chunk the piece lists (the stored
// pieces are read for the live set: expandPieces). One exception: a chunk
// listed only by a piece that an entry stored while collect runs names,
// and that the replica had not read yet when the drop began, may be
// dropped; the piece is read again after the drop, the chunk is wanted,
// and no entry naming the piece counts held meanwhile. The held vector is not
// changed: every entry counted held keeps, for each version that is not
// superseded, all its chunks, pieces and their chunks.
//
// It runs in three steps. (1) Without blocking anything, scan every
// stored entry into a retention plan and collect the live set; entries
// stored meanwhile have their chunks recorded in r.gcNoted. (2) Holding
// r.gcBar, which keeps ingestEntry from noting new entries, add the
// recorded chunks, stop fetching chunks that are no longer needed, and
// drop the rest from the chunk store (pack.GC without rewrites). An entry
// stored after this sees the dropped chunks as missing and wants them
// again, so nothing counted held can lose a chunk. (3) Rewrite packs with
// much dead space, unblocked: that pass drops nothing.
//
// A read error anywhere aborts the collection before anything is dropped:
// a partial view of the log must never define the live set. So does a
// chunk quarantined after step 1 took its view of held, or before it
// without lost having lowered held yet (errQuarantined): the plan may
// count held an entry that now lacks a chunk, so what that entry
// supersedes might be dropped while it is not here in full, and its
// chunks stop being wanted; the loop plans again at once. collect must
// not run concurrently with itself on one replica; the GC loop is its only
// caller outside tests.
func (r *replica) collect(ctx context.Context, pol Retention, now time.Time) (gcResult, error) {
	var res gcResult

	// Step 1: the plan and the live set, from a consistent start.
	r.mu.Lock()
	r.gcNoted = map[cid.Cid]struct{}{}
	r.gcPieces = map[cid.Cid]struct{}{}
	held := make(map[keys.DeviceID]uint64, len(r.held))
	for a, s := range r.held {
		held[a] = s
	}
	heads := r.db.Heads()
	seen := r.lostSeen // with held: the quarantines this plan knows of
	r.sinceGC = 0
	select {
	case <-r.gcKick:
	default:
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.gcNoted, r.gcPieces = nil, nil
		r.mu.Unlock()
	}()

	pl := newPlan(pol, now)
	need := map[cid.Cid]struct{}{}
	refs := map[entry.VersionID][]cid.Cid{} // chunks of held versions, decided after the scan
	for a, h := range heads {
		err := r.db.Range(a, 1, h.Seq, func(e *entry.Entry) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			res.Entries++
			isHeld := e.Seq() <= held[a]
			for i, hd := range e.Headers() {
				id := e.VersionID(i)
				pl.add(id, e.Time(), e.Clock(), isHeld, hd.Supersedes)
				switch {
				case len(hd.Refs) == 0:
				case !isHeld:
					for _, c := range hd.Refs {
						need[c] = struct{}{}
					}
				default:
					refs[id] = hd.Refs
				}
			}
			return nil
		})
		if err != nil {
			return res, fmt.Errorf("reading entries of %s for GC: %w", a.Short(), err)
		}
	}
	res.Plan = pl.finish()
	for id, cs := range refs {
		if pl.retained(id) {
			for _, c := range cs {
				need[c] = struct{}{}
			}
		}
	}
	refs = nil
	// The chunks of every live piece are live with it.
	var pieces []cid.Cid
	for c := range need {
		if entry.IsPieceCID(c) {
			pieces = append(pieces, c)
		}
	}
	expanded, err := r.expandPieces(ctx, pieces, need)
	if err != nil {
		return res, err
	}
	if r.testOnlyBeforeDrop != nil {
		r.testOnlyBeforeDrop()
	}

	// Step 2: drop, with no entry being noted meanwhile.
	r.gcBar.Lock()
	r.mu.Lock()
	if r.planStaleLocked(seen) {
		r.mu.Unlock()
		r.gcBar.Unlock()
		return res, r.replan()
	}
	for c := range r.gcNoted {
		need[c] = struct{}{}
		if entry.IsPieceCID(c) {
			pieces = append(pieces, c)
		}
	}
	for p := range r.gcPieces {
		expanded[p] = struct{}{} // its chunks came in through gcNoted
	}
	r.gcNoted, r.gcPieces = nil, nil
	res.Pieces = r.pieceMarksAfterGCLocked(pieces, need, expanded)
	for c := range r.wanted.all() {
		if _, ok := need[c]; !ok {
			r.wanted.del(c)
			delete(r.unavail, c)
			res.Unwanted++
		}
	}
	r.mu.Unlock()
	res.Live = len(need)
	drop, err := r.chunks.GC(ctx, pack.GCOptions{
		Live:  cidSet(need),
		Grace: r.gcGrace,
		// Rewrites come in step 3, so that they do not hold up entries,
		// and must not come here: a rewrite that quarantines a chunk
		// calls replica.lost, which waits for gcBar.
		RewriteThreshold: 1,
		// An empty live set is legitimate once the log says so (every
		// head inline, every old version expired); with no entry read it
		// is not.
		AllowEmptyLiveSet: res.Entries > 0,
		// Checked again under the store's GC lock, which scrub steps
		// also take: one may have quarantined a chunk since the check
		// above, its lost call waiting for gcBar.
		Before: func() error {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.planStaleLocked(seen) {
				return errQuarantined
			}
			return nil
		},
	})
	r.gcBar.Unlock()
	if errors.Is(err, errQuarantined) {
		return res, r.replan()
	}
	res.Dropped, res.DroppedBytes = drop.Dropped, drop.DroppedBytes
	res.BytesOnDiskBefore, res.BytesOnDiskAfter = drop.BytesOnDiskBefore, drop.BytesOnDiskAfter
	if err != nil {
		return res, fmt.Errorf("dropping unreferenced chunks: %w", err)
	}

	// Step 3: give the space back. Nothing is old enough to drop here.
	rw, err := r.chunks.GC(ctx, pack.GCOptions{Live: cidSet(nil), Grace: rewriteOnlyGrace, AllowEmptyLiveSet: true})
	res.PacksRewritten = rw.PacksRewritten
	if err != nil {
		return res, fmt.Errorf("rewriting packs: %w", err)
	}
	res.BytesOnDiskAfter = rw.BytesOnDiskAfter

	// Space freed may bring a full vault back under its quota.
	r.mu.Lock()
	wasFull := r.full
	r.full = r.overQuotaLocked()
	if wasFull != r.full || res.Dropped > 0 || res.Unwanted > 0 {
		r.grewLocked() // the status devices see changed
	}
	r.mu.Unlock()
	if wasFull && !r.full {
		r.kickFetch()
	}
	r.notePending() // live pieces whose chunks this collection could not keep for sure
	return res, nil
}

// expandPieces adds to need the chunks the stored pieces among ps list
// (from the cache or the store) and returns the pieces it expanded. A
// piece that is not stored (wanted, or quarantined meanwhile) is skipped:
// its chunks are checked when it is stored again (notePieceLocked), and
// pieceMarksAfterGCLocked has it checked again. Any other read error aborts
// the collection, as an entry read error does.
func (r *replica) expandPieces(ctx context.Context, ps []cid.Cid, need map[cid.Cid]struct{}) (map[cid.Cid]struct{}, error) {
	expanded := make(map[cid.Cid]struct{}, len(ps))
	for _, p := range ps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		refs, err := r.readPiece(p)
		switch {
		case errors.Is(err, pack.ErrNotFound), errors.Is(err, pack.ErrCorrupt):
			continue
		case err != nil:
			return nil, fmt.Errorf("reading pieces for GC: %w", err)
		}
		for _, c := range refs {
			need[c] = struct{}{}
		}
		expanded[p] = struct{}{}
	}
	return expanded, nil
}

// pieceMarksAfterGCLocked brings the piece marks in line with what the
// drop about to run keeps, given the live pieces ps (repeats allowed), the
// live set need and the pieces whose chunks are in it (expanded). A piece
// not live loses its marks: it and its chunks may be dropped. A live piece
// whose chunks are not known to be in need (not stored when GC read it, or
// named only by an entry noted while GC ran, outside the cache) loses its
// done mark and is checked again after the drop (unnoted), so a version
// naming it is not counted held on chunks the drop took. It returns the
// number of distinct live pieces.
func (r *replica) pieceMarksAfterGCLocked(ps []cid.Cid, need, expanded map[cid.Cid]struct{}) int {
	for p := range r.pieceDone {
		if _, ok := need[p]; !ok {
			delete(r.pieceDone, p)
		}
	}
	for p := range r.unnoted {
		if _, ok := need[p]; !ok {
			delete(r.unnoted, p)
		}
	}
	live := make(map[cid.Cid]struct{}, len(ps))
	for _, p := range ps {
		live[p] = struct{}{}
		if _, ok := expanded[p]; ok || r.wanted.has(p) {
			continue
		}
		delete(r.pieceDone, p)
		r.unnoted[p] = true
	}
	return len(live)
}

func cidSet(m map[cid.Cid]struct{}) iter.Seq[cid.Cid] {
	return func(yield func(cid.Cid) bool) {
		for c := range m {
			if !yield(c) {
				return
			}
		}
	}
}

// gcNoteLocked is noteLocked's hook for one version header of a stored
// entry: while a collection runs it records the chunks, and it starts a
// collection early after many versions were superseded.
func (r *replica) gcNoteLocked(h entry.VersionHeader) {
	if r.gcNoted != nil {
		for _, c := range h.Refs {
			r.gcNoted[c] = struct{}{}
		}
	}
	r.sinceGC += len(h.Supersedes)
	if r.sinceGC >= gcAfterSuperseded {
		r.sinceGC = 0
		select {
		case r.gcKick <- struct{}{}:
		default:
		}
	}
}

// gcLoop collects rep's garbage at start, every GC interval, and after a
// large change, until ctx ends.
func (r *Relay) gcLoop(ctx context.Context, rep *replica) {
	for {
		r.collectVault(ctx, rep)
		t := time.NewTimer(r.gcInterval())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-rep.gcKick:
			t.Stop()
		}
	}
}

// collectVault runs one collection of rep (one vault at a time across the
// relay, to bound the IO) and records it in the metrics and the log.
func (r *Relay) collectVault(ctx context.Context, rep *replica) {
	r.gcMu.Lock()
	defer r.gcMu.Unlock()
	if ctx.Err() != nil {
		return
	}
	start := time.Now()
	res, err := rep.collect(ctx, r.cfg.Retention, r.now())
	took := time.Since(start)
	r.stats.gcDone(res, err, r.now(), took)
	switch {
	case errors.Is(err, errQuarantined):
		r.log.Info("garbage collection", "vault", rep.id, "err", err)
	case err != nil && ctx.Err() == nil:
		r.log.Warn("garbage collection", "vault", rep.id, "err", err)
	case err == nil:
		r.log.Info("garbage collection", "vault", rep.id, "entries", res.Entries,
			"versions", res.Plan.Versions, "expired", res.Plan.Expired, "live_chunks", res.Live, "live_pieces", res.Pieces,
			"reclaimed_chunks", res.Dropped, "reclaimed_bytes", res.DroppedBytes,
			"packs_rewritten", res.PacksRewritten, "took", took)
	}
	if r.afterGC != nil {
		r.afterGC(rep.id, res, err)
	}
}

// now is the relay's clock for retention decisions.
func (r *Relay) now() time.Time {
	if r.cfg.Now != nil {
		return r.cfg.Now()
	}
	return time.Now()
}

func (r *Relay) gcInterval() time.Duration {
	if r.cfg.GCInterval > 0 {
		return r.cfg.GCInterval
	}
	return DefaultGCInterval
}

// planStaleLocked reports whether a chunk was quarantined that a plan
// made when lostSeen was seen does not account for.
func (r *replica) planStaleLocked(seen uint64) bool {
	return r.lostSeen != seen || r.chunks.Stats().Quarantined != seen
}

// replan asks the GC loop to collect again at once and returns
// errQuarantined.
func (r *replica) replan() error {
	select {
	case r.gcKick <- struct{}{}:
	default:
	}
	return errQuarantined
}
