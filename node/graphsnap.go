package node

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/weftsync/weft/node/logview"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/graphsnap"
)

// A vault's version graph and bodies are derived from its logs. Rebuilding
// them at every start read, decrypted and decoded the whole log (over a
// second at 100,000 files, issue 16's B10), so the agent writes what it
// derived to graph.snap when it stops (store/graphsnap) and the next start
// loads it and replays only the entries after it. The logs stay the source
// of truth: a snapshot that does not check out against them is ignored and
// the whole log replayed, as before.

// graphSnapFile is the snapshot's name in the vault's home directory.
const graphSnapFile = "graph.snap"

// openStats says how openVault rebuilt the graph: from a snapshot or not,
// and how many entries it read back from the log (the cost a snapshot
// saves; logged, and counted by the tests).
type openStats struct {
	fromSnapshot bool
	replayed     int
	// snapPaths are the paths of the versions the snapshot folded in, not
	// yet told to the engine (touchSnapshotPaths).
	snapPaths []string
}

func (v *vault) graphSnapPath() string { return filepath.Join(v.cfg.Dir, graphSnapFile) }

// loadGraphSnapshotLocked folds in the vault's graph snapshot if it is
// current, and returns the sequence number after which each author's log
// must still be replayed (nil: no snapshot applies, replay every entry).
//
// Current means: of this vault, and every entry it reaches is still in the
// log, by the CID it had when the snapshot was written (a log that lost its
// tail, or was fetched again with other entries, is caught here). Entries
// appended after the snapshot (a run that ended without writing one) are
// simply replayed after it. heads are the log's heads; v.mu must be held
// (or v not yet shared).
func (v *vault) loadGraphSnapshotLocked(heads map[keys.DeviceID]entry.Head) map[keys.DeviceID]uint64 {
	l, err := graphsnap.ReadLazy(v.graphSnapPath())
	if err != nil {
		v.log.Warn("ignoring the graph snapshot; replaying the whole log", "err", err)
		return nil
	}
	if l == nil {
		return nil
	}
	s := &l.Snapshot
	if err := v.snapshotCurrent(s, heads); err != nil {
		v.log.Info("graph snapshot out of date; replaying the whole log", "why", err)
		return nil
	}
	from := make(map[keys.DeviceID]uint64, len(s.Reach))
	for a, r := range s.Reach {
		from[a] = r.Seq
		v.view.Folded[a] = r.Seq
	}
	v.view.Clock = max(v.view.Clock, s.Clock)
	v.view.HLC = max(v.view.HLC, s.HLC)
	// The versions are decoded one at a time, each folded in as it comes
	// (a restart at 100,000 notes held 25 MB of them decoded at once).
	touched := make([]string, 0, l.Len()) // for touchSnapshotPaths, once the index is loaded
	v.view.Graph.Grow(l.Len())
	err = l.Each(func(sv *graphsnap.Version) error {
		cv := engine.CoreVersion(sv.ID, sv.Clock, sv.Time, sv.Body)
		cv.Text = sv.Text // computed from inline bytes the snapshot does not hold
		cv.AuthorName = sv.Author
		if err := v.view.Graph.Add(cv); err != nil {
			v.log.Warn("version not added to graph", "version", sv.ID, "err", err)
			return nil
		}
		body := sv.Body
		if body.HasPieces() {
			// Kept as the entry lists it (see saveGraphSnapshot): expanded
			// from the stored pieces, or kept waiting for them, exactly as
			// the replay does.
			v.view.Pieced[logview.EntryRef{Author: sv.ID.Author, Seq: sv.ID.Seq}] = struct{}{}
			body = v.pieces.ExpandStored(&entry.Body{Versions: []entry.Version{body}}).Versions[0]
		}
		v.view.SetBody(sv.ID, body)
		touched = append(touched, body.Path)
		return nil
	})
	if err != nil {
		// Part of the snapshot is folded in: start again from nothing
		// and replay the whole log.
		v.log.Warn("ignoring the graph snapshot; replaying the whole log", "err", err)
		replaying := v.view.Replaying
		v.view = logview.New(v.log)
		v.view.Replaying = replaying
		return nil
	}
	v.opened.snapPaths = touched
	v.view.SnapReach = maps.Clone(v.view.Folded)
	return from
}

// touchSnapshotPaths tells the engine which of the paths the graph
// snapshot folded in need a decision: those whose folder index does not
// record their one head (engine.AtHead). Reopened, which runs next, would
// drop the others from the dirty set anyway; judging them here instead,
// on every core, spares a restart touching every path and then checking
// them one by one on one core (0.17 s at 100,000 files, docs/benchmarks.md).
// The graph and the index must be complete (the log replayed after the
// snapshot, the index loaded) and v not yet shared: the check reads both
// from several goroutines.
func (v *vault) touchSnapshotPaths() {
	paths := v.opened.snapPaths
	v.opened.snapPaths = nil
	if len(paths) == 0 {
		return
	}
	workers := min(runtime.GOMAXPROCS(0), (len(paths)+snapCheckMin-1)/snapCheckMin)
	need := notAtHead(guardIndex{v}, paths, workers)
	v.engine.Do(func(e *engine.Engine) {
		for _, p := range need {
			e.Touch(p)
		}
	})
}

// snapCheckMin is the fewest paths touchSnapshotPaths gives a goroutine.
const snapCheckMin = 4096

// notAtHead returns, in their order, the paths for which engine.AtHead
// does not hold, judged on workers goroutines (at least one) that each
// take a contiguous share of paths. view must not change meanwhile.
func notAtHead(view engine.View, paths []string, workers int) []string {
	workers = max(1, min(workers, len(paths)))
	parts := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		share := paths[w*len(paths)/workers : (w+1)*len(paths)/workers]
		wg.Go(func() {
			for _, p := range share {
				if !engine.AtHead(view, p) {
					parts[w] = append(parts[w], p)
				}
			}
		})
	}
	wg.Wait()
	return slices.Concat(parts...)
}

// errSnapshotStale wraps why a snapshot does not describe the log held.
var errSnapshotStale = errors.New("graph snapshot does not match the log")

func (v *vault) snapshotCurrent(s *graphsnap.Snapshot, heads map[keys.DeviceID]entry.Head) error {
	if s.Vault != v.id {
		return fmt.Errorf("%w: of vault %s", errSnapshotStale, s.Vault)
	}
	for a, r := range s.Reach {
		if r.Seq == 0 || r.Seq > heads[a].Seq {
			return fmt.Errorf("%w: reaches %s/%d, the log holds %d", errSnapshotStale, a.Short(), r.Seq, heads[a].Seq)
		}
		c, err := v.db.EntryCID(a, r.Seq)
		if err != nil {
			return fmt.Errorf("%w: %v", errSnapshotStale, err)
		}
		if !c.Equals(r.CID) {
			return fmt.Errorf("%w: entry %s/%d is %s, the snapshot saw %s", errSnapshotStale, a.Short(), r.Seq, c, r.CID)
		}
	}
	return nil
}

// saveGraphSnapshot writes what the vault derived from its log, for the
// next start. Called once the vault's goroutines have stopped; nothing is
// written when nothing was folded in since the snapshot loaded or last
// written. A failure costs only the next start's time.
func (v *vault) saveGraphSnapshot() error {
	v.mu.Lock()
	if !v.view.Unsaved() {
		v.mu.Unlock()
		return nil
	}
	s := &graphsnap.Snapshot{
		Vault:    v.id,
		Reach:    make(map[keys.DeviceID]graphsnap.Reach, len(v.view.Folded)),
		Clock:    v.view.Clock,
		HLC:      v.view.HLC,
		Versions: make([]graphsnap.Version, 0, v.view.Graph.Len()),
	}
	for a, seq := range v.view.Folded {
		c, err := v.db.EntryCID(a, seq)
		if err != nil {
			v.mu.Unlock()
			return fmt.Errorf("graph snapshot: the log lacks what the graph holds: %w", err)
		}
		s.Reach[a] = graphsnap.Reach{Seq: seq, CID: c}
	}
	for g, body := range v.view.Bodies() {
		s.Versions = append(s.Versions, graphsnap.Version{ID: g.ID, Clock: g.Clock, Time: g.Time, Text: g.Text, Author: g.AuthorName, Body: body})
	}
	reach := maps.Clone(v.view.Folded)
	pieced := slices.Collect(maps.Keys(v.view.Pieced))
	v.mu.Unlock()
	if err := v.listPiecesAsStored(s, pieced); err != nil {
		return err
	}
	if err := graphsnap.Write(v.graphSnapPath(), s); err != nil {
		return err
	}
	v.mu.Lock()
	v.view.SnapReach = reach
	v.mu.Unlock()
	return nil
}

// listPiecesAsStored puts back, in s, the piece references of every
// version whose entry lists pieces (the pieced entries: few, and small),
// read from the log, in place of the chunk list expanded from them. So the
// next start expands them from the stored pieces as the replay does: a
// piece lost or rotted since is noticed and fetched again (pieces.go)
// instead of hidden behind a chunk list the snapshot remembered.
func (v *vault) listPiecesAsStored(s *graphsnap.Snapshot, pieced []logview.EntryRef) error {
	if len(pieced) == 0 {
		return nil
	}
	stored := map[protocol.VersionID][]entry.ChunkRef{}
	for _, r := range pieced {
		e, err := v.db.Get(r.Author, r.Seq)
		if err != nil {
			return fmt.Errorf("graph snapshot: reading an entry that lists pieces: %w", err)
		}
		body, err := v.crypt.OpenStoredBody(e)
		if err != nil {
			return fmt.Errorf("graph snapshot: %w", err)
		}
		for i := range body.Versions {
			if body.Versions[i].HasPieces() {
				stored[e.VersionID(i)] = body.Versions[i].Chunks
			}
		}
	}
	for i := range s.Versions {
		if refs, ok := stored[s.Versions[i].ID]; ok {
			s.Versions[i].Body.Chunks = refs
		}
	}
	return nil
}
