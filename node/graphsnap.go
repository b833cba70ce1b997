package node

import (
	"errors"
	"fmt"
	"log/slog"
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

// snapBuild is a graph snapshot read and folded into a view of its own
// (buildGraphSnapshot), before the vault's log is open: the log's open and
// the snapshot's load, each about a quarter of a restart at 100,000 files
// (docs/benchmarks.md), run side by side. Whether it applies is judged once
// the log is open (useGraphSnapshotLocked), as before; a snapshot that
// does not is dropped whole.
type snapBuild struct {
	head   *graphsnap.Snapshot // the snapshot's header (Versions nil); nil: no snapshot
	view   *logview.View       // its versions folded in
	paths  []string            // the folded versions' paths (touchSnapshotPaths)
	pieced []snapPieced        // versions whose bodies list pieces, as stored
	err    error               // the snapshot could not be read or decoded whole
}

// snapPieced is a version whose body lists pieces, kept as the entry
// lists it until the log is open to expand it (useGraphSnapshotLocked).
type snapPieced struct {
	id   protocol.VersionID
	body entry.Version
}

// startGraphSnapshot starts buildGraphSnapshot of the snapshot in the
// vault directory dir on a goroutine of its own; the function it returns
// waits for the result (each call returns the same).
func startGraphSnapshot(dir string, log *slog.Logger) func() *snapBuild {
	c := make(chan *snapBuild, 1)
	go func() { c <- buildGraphSnapshot(filepath.Join(dir, graphSnapFile), log) }()
	return sync.OnceValue(func() *snapBuild { return <-c })
}

// buildGraphSnapshot reads the graph snapshot at path and folds its
// versions into a new view. It touches nothing of the vault's: it runs
// while the vault's log opens. A snapshot that stops decoding part-way
// is returned as an error, with nothing folded in.
func buildGraphSnapshot(path string, log *slog.Logger) *snapBuild {
	l, err := graphsnap.ReadLazy(path)
	if err != nil {
		return &snapBuild{err: err}
	}
	if l == nil {
		return &snapBuild{}
	}
	b := &snapBuild{head: &l.Snapshot, view: logview.New(log), paths: make([]string, 0, l.Len())}
	// The versions are decoded one at a time, each folded in as it comes
	// (a restart at 100,000 notes held 25 MB of them decoded at once).
	b.view.Graph.Grow(l.Len())
	err = l.Each(func(sv *graphsnap.Version) error {
		cv := engine.CoreVersion(sv.ID, sv.Clock, sv.Time, sv.Body)
		cv.Text = sv.Text // computed from inline bytes the snapshot does not hold
		cv.AuthorName = sv.Author
		if err := b.view.Graph.Add(cv); err != nil {
			log.Warn("version not added to graph", "version", sv.ID, "err", err)
			return nil
		}
		if sv.Body.HasPieces() {
			// Kept as the entry lists it (see saveGraphSnapshot), to be
			// expanded from the stored pieces, or kept waiting for them,
			// exactly as the replay does.
			b.view.Pieced[logview.EntryRef{Author: sv.ID.Author, Seq: sv.ID.Seq}] = struct{}{}
			b.pieced = append(b.pieced, snapPieced{id: sv.ID, body: sv.Body})
		}
		b.view.SetBody(sv.ID, sv.Body)
		b.paths = append(b.paths, sv.Body.Path)
		return nil
	})
	if err != nil {
		return &snapBuild{err: err}
	}
	return b
}

// useGraphSnapshotLocked makes b the vault's view if b is a snapshot
// that is current, and returns the sequence number after which each
// author's log must still be replayed (nil: no snapshot applies, replay
// every entry into the view the vault has).
//
// Current means: of this vault, and every entry it reaches is still in the
// log, by the CID it had when the snapshot was written (a log that lost its
// tail, or was fetched again with other entries, is caught here). Entries
// appended after the snapshot (a run that ended without writing one) are
// simply replayed after it. heads are the log's heads; v.mu must be held
// (or v not yet shared).
func (v *vault) useGraphSnapshotLocked(b *snapBuild, heads map[keys.DeviceID]entry.Head) map[keys.DeviceID]uint64 {
	if b.err != nil {
		v.log.Warn("ignoring the graph snapshot; replaying the whole log", "err", b.err)
		return nil
	}
	if b.head == nil {
		return nil
	}
	s := b.head
	if err := v.snapshotCurrent(s, heads); err != nil {
		v.log.Info("graph snapshot out of date; replaying the whole log", "why", err)
		return nil
	}
	b.view.Replaying = v.view.Replaying
	v.view = b.view
	from := make(map[keys.DeviceID]uint64, len(s.Reach))
	for a, r := range s.Reach {
		from[a] = r.Seq
		v.view.Folded[a] = r.Seq
	}
	v.view.Clock = max(v.view.Clock, s.Clock)
	v.view.HLC = max(v.view.HLC, s.HLC)
	for _, p := range b.pieced {
		v.view.SetBody(p.id, v.pieces.ExpandStored(&entry.Body{Versions: []entry.Version{p.body}}).Versions[0])
	}
	v.opened.snapPaths = b.paths
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
