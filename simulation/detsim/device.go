package detsim

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// logEntry is one entry of an author's log: the versions it carries and
// the clocks the core orders them by.
type logEntry struct {
	author   keys.DeviceID
	seq      uint64
	clock    uint64
	time     int64
	versions []entry.Version
}

// device is one simulated device: what a node keeps for one vault (the
// logs it holds, the version graph folded from them, the folder index)
// and the folder's disk, which users change behind its back.
type device struct {
	idx    int
	id     keys.DeviceID
	skew   time.Duration
	online bool

	logs   map[keys.DeviceID][]*logEntry
	graph  *protocol.Graph
	bodies map[protocol.VersionID]entry.Version
	clock  uint64 // Lamport: the highest entry clock seen
	hlc    int64  // hybrid logical clock, unix ms

	disk      map[string][]byte
	index     map[string]engine.Disk
	unscanned map[string]bool // changed on disk since the last scan
	// crashPending kills the device in its next carry-out of a decision,
	// between writing files and committing what records them.
	crashPending bool

	// eng is the vault's reconcile engine, as a node keeps one per vault:
	// the dirty paths, their waits for history and errors, the
	// mass-delete guard (eng.Deletes) and the recent applies (eng.Recent).
	// A restart makes a new one, as node's does.
	eng *engine.Engine
	// applied are the files this reconcile pass replaced with a peer's
	// content, with what was there before: what an editor that read the
	// file before the apply saves on top of it (racingSave).
	applied []appliedWrite
	// deletedBy is, per path, the content a user's deletion removed from
	// this disk and no scan has recorded yet: a rejected hold takes that
	// knowing replacement back (the file returns).
	deletedBy map[string][32]byte
}

// appliedWrite is a file a reconcile pass replaced: its path and the
// bytes there before.
type appliedWrite struct {
	path   string
	before []byte
}

func newDevice(idx int, skew time.Duration, ecfg engine.Config) *device {
	return &device{
		idx: idx, id: keys.DeviceID{byte(idx + 1)}, skew: skew, online: true,
		eng: engine.New(ecfg), deletedBy: map[string][32]byte{},
		logs:   map[keys.DeviceID][]*logEntry{},
		graph:  protocol.NewGraph(),
		bodies: map[protocol.VersionID]entry.Version{},
		disk:   map[string][]byte{}, index: map[string]engine.Disk{},
		unscanned: map[string]bool{},
	}
}

// authors returns the authors whose logs d holds, in ID order (never map
// order: the run must not depend on it).
func (d *device) authors() []keys.DeviceID {
	out := make([]keys.DeviceID, 0, len(d.logs))
	for a := range d.logs {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b keys.DeviceID) int { return bytes.Compare(a[:], b[:]) })
	return out
}

// sortedKeys lists a map's keys in order: the run never depends on map
// order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func hashOf(b []byte) [32]byte { return blake3.Sum256(b) }

// fileDisk is the engine's view of a file with content b, as a scan finds
// it (no version yet).
func fileDisk(b []byte) engine.Disk {
	return engine.Disk{Kind: protocol.KindFile, ContentHash: hashOf(b), Mode: 0o644}
}

// fold adds entry e to d's log and its versions to d's graph, as a node
// does when an entry arrives or is authored, and marks their paths dirty.
func (s *sim) fold(d *device, e *logEntry) error {
	if got := uint64(len(d.logs[e.author])); got+1 != e.seq {
		return fmt.Errorf("device %d: entry %d of %x after %d", d.idx, e.seq, e.author[:1], got)
	}
	d.logs[e.author] = append(d.logs[e.author], e)
	d.clock = max(d.clock, e.clock)
	d.hlc = max(d.hlc, e.time)
	for i, v := range e.versions {
		id := protocol.VersionID{Author: e.author, Seq: e.seq, Index: uint32(i)}
		if err := d.graph.Add(engine.CoreVersion(id, e.clock, e.time, v)); err != nil {
			return fmt.Errorf("device %d: folding %v: %w", d.idx, id, err)
		}
		d.bodies[id] = v
		d.eng.Step(engine.Touched{Paths: []string{v.Path}})
	}
	return nil
}

// author writes vs as one new entry of d's log and returns the IDs the
// versions got, by path.
func (s *sim) author(d *device, vs []entry.Version) (map[string]protocol.VersionID, error) {
	engine.AuthorOrder(vs)
	d.clock++
	t := max(d.hlc+1, s.now.Add(d.skew).UnixMilli())
	e := &logEntry{author: d.id, seq: uint64(len(d.logs[d.id])) + 1, clock: d.clock, time: t, versions: vs}
	if err := s.fold(d, e); err != nil {
		return nil, err
	}
	ids := map[string]protocol.VersionID{}
	for i, v := range vs {
		ids[v.Path] = protocol.VersionID{Author: d.id, Seq: e.seq, Index: uint32(i)}
	}
	s.res.Entries++
	s.changed = true
	return ids, nil
}

// fileVersion is the body version of a file with content b at path.
func fileVersion(path string, b []byte, mtime time.Time, sup []protocol.VersionID) entry.Version {
	return entry.Version{Path: path, Kind: entry.KindFile, Mode: 0o644, Size: uint64(len(b)), MTime: mtime.UnixNano(),
		Hash: hashOf(b), Inline: bytes.Clone(b), Supersedes: sup}
}

// reconcile carries out d's dirty paths in the engine's order, as node's
// reconcile does: held incoming deletions that no longer stand are
// released, the mass-delete guard judges the pass's deletions
// (engine.DeleteGuard.JudgeIncoming) and those it holds are left out.
func (s *sim) reconcile(d *device) error {
	d.applied = d.applied[:0]
	d.eng.Tick(s.devNow(d))
	rd := d.eng.Ready(s.guardIndex(d))
	s.noteIncomingHold(d, rd.Withheld, rd.Guard)
	for _, batch := range [][]string{rd.Adds, rd.Deletions, rd.AfterDeletions} {
		for _, p := range batch {
			if err := s.reconcilePath(d, p); errors.Is(err, errKilled) {
				return nil // the restart left every path dirty
			} else if err != nil {
				return err
			}
		}
	}
	d.eng.Advance(rd)
	return nil
}

// errKilled ends a reconcile whose device was killed (and restarted)
// while carrying out a decision.
var errKilled = errors.New("device killed")

// reconcilePath decides path on d and carries the decision out, as
// node's reconcilePath does: a local change not yet scanned is recorded
// first and the path decided again; a path whose heads supersede versions
// not here waits up to engine.DanglingWait.
func (s *sim) reconcilePath(d *device, path string) error {
	var dec protocol.Decision
	for try := 0; ; try++ {
		dd, err := d.eng.Decide(path, s.guardIndex(d))
		if err != nil {
			return fmt.Errorf("device %d: resolving %s: %w", d.idx, path, err)
		}
		switch dd.Act {
		case engine.ActNothing:
			d.eng.Step(engine.Settled{Path: path})
			return nil
		case engine.ActWait:
			if dd.WaitBegan {
				s.tracef("dev%d wait %s: its heads supersede versions not here (%s)", d.idx, path, vids(d.graph.Dangling(path)))
			}
			s.res.Waits++
			d.eng.Step(engine.Failed{Path: path, Waiting: true})
			return nil
		}
		dec = dd.Decision
		stale := false
		for _, p := range append([]string{path}, copyPaths(dec)...) {
			if d.unscanned[p] {
				stale = true
				if err := s.scanPaths(d, []string{p}, engine.ScanSettled); err != nil {
					return err
				}
			}
		}
		if !stale {
			break
		}
		if try == 2 {
			d.eng.Step(engine.Failed{Path: path, Waiting: true})
			return nil
		}
	}
	if err := s.carryOut(d, path, dec); err != nil {
		return err
	}
	d.eng.Step(engine.Settled{Path: path})
	return nil
}

func copyPaths(dec protocol.Decision) []string {
	var out []string
	for _, c := range dec.Copies {
		out = append(out, c.Path)
	}
	return out
}

// carryOut writes a decision to d's disk and index and records it: the
// index alone for a single head or identical contents, else one entry
// that supersedes every head and adds the new conflict copies.
func (s *sim) carryOut(d *device, path string, dec protocol.Decision) error {
	heads := s.describeHeads(d, path)
	winner := d.bodies[dec.Winner.ID]
	var merged []byte
	copies := dec.Copies
	if dec.Outcome == protocol.OutcomeMerge {
		sides := make([][]byte, len(dec.Merge.Sides))
		for i, sd := range dec.Merge.Sides {
			sides[i] = s.content[sd.ContentHash]
		}
		m, clean, err := protocol.MergeFile(path, s.content[dec.Merge.Base.ContentHash], sides)
		if err == nil && clean {
			merged, copies = m, nil
		}
	}
	type copyOut struct {
		ver      entry.Version
		existing protocol.VersionID
		rec      engine.Disk
	}
	var outs []copyOut
	var fresh []engine.NewCopy // copies the graph does not hold, for Resolution
	for _, c := range copies {
		cur, had := d.index[c.Path]
		o := copyOut{ver: d.bodies[c.Version.ID]}
		o.ver.Path = c.Path
		if c.Exists {
			o.existing, _ = engine.SameContentHead(d.graph, c.Path, c.Version)
		} else {
			fresh = append(fresh, engine.NewCopy{Body: o.ver, Disk: cur, Had: had})
		}
		b := s.content[c.Version.ContentHash]
		s.writeFile(d, c.Path, b, cur, had)
		o.rec = fileDisk(b)
		o.rec.Version = o.existing
		outs = append(outs, o)
		if o.existing == (protocol.VersionID{}) {
			s.res.Conflicts++
		}
	}
	old, had := d.index[path]
	before, hadBytes := d.disk[path]
	rec := engine.Disk{Version: dec.Winner.ID}
	switch {
	case merged != nil:
		d.disk[path] = bytes.Clone(merged)
		rec = fileDisk(merged)
		s.content[rec.ContentHash] = bytes.Clone(merged)
		s.changed = true
	case winner.Kind == entry.KindDeletion:
		if _, ok := d.disk[path]; ok {
			delete(d.disk, path)
			s.changed = true
		}
	default:
		b := s.content[dec.Winner.ContentHash]
		s.writeFile(d, path, b, old, had)
		rec = fileDisk(b)
		rec.Version = dec.Winner.ID
	}
	if d.crashPending {
		d.crashPending = false
		if merged != nil {
			// The clean merge is on the disk, unrecorded: the scan after
			// the restart records it as this device's change, or a user
			// replaces it knowingly. Either way what each side changed is
			// kept, as when the merge is recorded below; the sides' own
			// contents are on no disk any more (deterministic tier,
			// finding 3).
			for _, sd := range dec.Merge.Sides {
				s.replaced[sd.ContentHash]++
			}
		}
		s.tracef("dev%d killed while carrying out %s", d.idx, path)
		if err := s.restart(d, false); err != nil {
			return err
		}
		return errKilled
	}
	setIndex := func(p string, r engine.Disk) {
		if r.Kind == 0 {
			delete(d.index, p)
			return
		}
		d.index[p] = r
	}
	if hadBytes && rec.Kind != 0 && hashOf(before) != rec.ContentHash {
		d.applied = append(d.applied, appliedWrite{path, before})
	}
	if !engine.RecordsResolution(dec) {
		setIndex(path, rec)
		for _, o := range outs {
			setIndex(o.ver.Path, o.rec)
		}
		// node's commitIndex: only a record that changed is an apply.
		if had != (rec.Kind != 0) || (had && old != rec) {
			s.noteApplied(d, path, old, had, rec)
		}
		return nil
	}
	written := winner
	if merged != nil {
		written = fileVersion(path, merged, s.now.Add(d.skew), nil)
	}
	ids, err := s.author(d, engine.Resolution(d.graph, dec, written, fresh))
	if err != nil {
		return err
	}
	if rec.Kind != 0 {
		rec.Version = ids[path]
	}
	setIndex(path, rec)
	s.noteApplied(d, path, old, had, rec) // node's RecordResolution (carryside.go), after authoring
	for _, o := range outs {
		if o.existing == (protocol.VersionID{}) {
			o.rec.Version = ids[o.ver.Path]
		}
		setIndex(o.ver.Path, o.rec)
	}
	if merged != nil {
		s.res.Merges++
		s.origins = append(s.origins, origin{path, rec.ContentHash, false})
		for _, sd := range dec.Merge.Sides {
			s.replaced[sd.ContentHash]++ // a clean merge keeps what each side changed
		}
	}
	s.tracef("dev%d decide %s: %v winner %s, %d copies; heads %s", d.idx, path, dec.Outcome, vid(dec.Winner.ID), len(outs), heads)
	return nil
}

// writeFile writes b at path on d's disk for a decision, as node's
// carry.Version does: a file the index already records with that content
// is left alone (node does not look at the disk then, so a file whose
// deletion the mass-delete guard holds stays deleted); otherwise the
// bytes are written when they differ.
func (s *sim) writeFile(d *device, path string, b []byte, cur engine.Disk, had bool) {
	if had && cur.Kind == protocol.KindFile && cur.ContentHash == hashOf(b) {
		return
	}
	if old, ok := d.disk[path]; !ok || !bytes.Equal(old, b) {
		d.disk[path] = bytes.Clone(b)
		s.changed = true
	}
}

// describeHeads lists path's heads on d for the trace: ID, content (the
// first bytes of its hash) and what it supersedes.
func (s *sim) describeHeads(d *device, path string) string {
	var b strings.Builder
	for i, h := range d.graph.Heads(path) {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%x<%s", vid(h.ID), h.ContentHash[:3], vids(h.Supersedes))
	}
	return b.String()
}

// vid names a version for the trace by device index: d1:3.0 is the first
// version of device 1's third entry.
func vid(id protocol.VersionID) string {
	if id == (protocol.VersionID{}) {
		return "-"
	}
	return fmt.Sprintf("d%d:%d.%d", int(id.Author[0])-1, id.Seq, id.Index)
}

// vids names a list of versions for the trace.
func vids(ids []protocol.VersionID) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = vid(id)
	}
	return "[" + strings.Join(out, " ") + "]"
}
