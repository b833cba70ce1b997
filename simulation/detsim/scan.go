package detsim

import (
	"bytes"
	"slices"
	"time"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
)

// devNow is the time on d's clock: what node's v.now() reads.
func (s *sim) devNow(d *device) time.Time { return s.now.Add(d.skew) }

// watchedScan is a scan step: what the watcher reported. The deletions it
// deferred earlier are judged first, once they have stopped arriving
// (node's recheck: engine.DeleteGuard.Deferred, a settled scan of them);
// then the changed paths are scanned as a watched batch, whose deletions
// wait in their turn (engine.ScanWatched).
func (s *sim) watchedScan(d *device) error {
	if ps := d.eng.Deletes.Deferred(s.devNow(d)); len(ps) > 0 {
		if err := s.scanPaths(d, ps, engine.ScanSettled); err != nil {
			return err
		}
	}
	if len(d.unscanned) == 0 {
		return nil
	}
	return s.scanPaths(d, sortedKeys(d.unscanned), engine.ScanWatched)
}

// scanPaths scans paths on d as node's scan does: it compares each with
// the folder index, hands the changes to the mass-delete guard
// (engine.DeleteGuard.JudgeLocal, in mode), and records every change the
// guard does not withhold, path by path: a new version, an adopted head
// (a rebuilt index), or nothing (unchanged content). A withheld deletion
// keeps its index record, as in node: nothing is recorded until the
// user decides (or the file comes back).
func (s *sim) scanPaths(d *device, paths []string, mode engine.ScanMode) error {
	paths = slices.Compact(slices.Sorted(slices.Values(paths)))
	var changes []engine.LocalChange
	var neverRecorded []string
	for _, p := range paths {
		wasUnscanned := d.unscanned[p]
		delete(d.unscanned, p)
		cur, had := d.index[p]
		b, onDisk := d.disk[p]
		switch {
		case !onDisk && !had:
			if wasUnscanned {
				neverRecorded = append(neverRecorded, p)
			}
		case !onDisk:
			changes = append(changes, engine.LocalChange{Path: p, Deleted: true, Kind: cur.Kind, Hash: cur.ContentHash})
		case had && cur.Kind == protocol.KindFile && cur.ContentHash == hashOf(b):
		default:
			changes = append(changes, engine.LocalChange{Path: p, Kind: protocol.KindFile, Hash: hashOf(b)})
		}
	}
	for _, p := range neverRecorded {
		s.tracef("dev%d scan %s: gone, never recorded", d.idx, p)
	}
	v := d.eng.Deletes.JudgeLocal(changes, mode, paths, s.guardIndex(d), s.devNow(d))
	if v.Began {
		s.res.Holds++
		s.tracef("dev%d holds local deletions: %d of %d files (%q...)", d.idx, v.HeldFiles, v.IndexFiles, v.Sample)
	}
	if v.Ended {
		s.tracef("dev%d held local deletions are back on disk", d.idx)
	}
	withheld := map[string]bool{}
	for _, p := range v.Withheld {
		withheld[p] = true
	}
	if len(v.Withheld) > 0 && !v.Began {
		s.tracef("dev%d scan withholds deletions %q", d.idx, v.Withheld)
	}
	for _, c := range changes {
		if c.Deleted && withheld[c.Path] {
			continue
		}
		if err := s.record(d, c.Path, v.Confirmed[c.Path]); err != nil {
			return err
		}
	}
	return nil
}

// record records the change a scan found at path on d (the file gone, or
// a content the index does not hold), as node/record's Version does. A
// deletion the user accepted past the mass-delete guard (confirmed)
// carries entry.DeletionConfirmed.
func (s *sim) record(d *device, path string, confirmed bool) error {
	cur, had := d.index[path]
	b, onDisk := d.disk[path]
	if !onDisk {
		delete(d.index, path)
		sup := s.supersedesFor(d, path, cur, true, engine.Disk{})
		if len(sup) == 0 {
			s.tracef("dev%d scan %s: gone, supersedes nothing (index %s)", d.idx, path, vid(cur.Version))
			return nil
		}
		del := entry.Version{Path: path, Kind: entry.KindDeletion, Supersedes: sup}
		if confirmed {
			del.Mode = entry.DeletionConfirmed
		}
		ids, err := s.author(d, []entry.Version{del})
		delete(d.deletedBy, path)
		if confirmed {
			s.accepted = append(s.accepted, acceptedDeletion{path: path, hash: cur.ContentHash, id: ids[path], dev: d.idx, origins: len(s.origins)})
			s.acceptedIDs[ids[path]] = true
			s.tracef("dev%d scan %s: confirmed deletion superseding %s", d.idx, path, vids(sup))
		} else {
			s.tracef("dev%d scan %s: deletion superseding %s", d.idx, path, vids(sup))
		}
		return err
	}
	now := fileDisk(b)
	if !had {
		if id, ok := engine.HeadHolding(d.graph, path, now); ok {
			now.Version = id
			d.index[path] = now
			s.res.Adoptions++
			s.tracef("dev%d scan %s: adopted head %s", d.idx, path, vid(id))
			return nil
		}
	}
	return s.recordFile(d, path, b, now, s.supersedesFor(d, path, cur, had, now), false, "scan")
}

// recordFile authors the user's content b at path, found on d's disk as
// now, as a version superseding sup, and notes it for the checks: its
// content, the user's write, and an origin (kept: a user's rejection of
// held incoming deletions, which keeps what was there). what names the
// step in the trace.
func (s *sim) recordFile(d *device, path string, b []byte, now engine.Disk, sup []protocol.VersionID, kept bool, what string) error {
	ids, err := s.author(d, []entry.Version{fileVersion(path, b, s.devNow(d), sup)})
	if err != nil {
		return err
	}
	now.Version = ids[path]
	d.index[path] = now
	s.content[now.ContentHash] = bytes.Clone(b)
	s.userFiles = append(s.userFiles, userFile{id: ids[path], hash: now.ContentHash})
	s.origins = append(s.origins, origin{path, now.ContentHash, kept})
	s.tracef("dev%d %s %s: version %s %x superseding %s", d.idx, what, path, vid(ids[path]), now.ContentHash[:4], vids(sup))
	return nil
}

// supersedesFor is what a local change of path to changed (Kind 0: a
// deletion) supersedes, where the index holds cur (when had), as node's
// supersedesForLocalChange decides: what the index gives
// (Rules.Supersedes), unless the change races a peer's version applied
// just before (engine.RecentApplies.ForLocalChange).
func (s *sim) supersedesFor(d *device, path string, cur engine.Disk, had bool, changed engine.Disk) []protocol.VersionID {
	if s.cfg.TestOnlyNoApplyRace {
		return d.eng.Supersedes(d.graph, path, cur, had)
	}
	sup, raced := d.eng.LocalChange(d.graph, path, cur, had, changed, s.devNow(d))
	if raced {
		s.res.ApplyRaces++
		s.tracef("dev%d scan %s: right after applying %s, so concurrent with it", d.idx, path, vid(cur.Version))
	}
	return sup
}

// noteApplied remembers that an apply replaced old (when had) at path on
// d with rec, as node's noteAppliedLocked does
// (engine.RecentApplies.Applied).
func (s *sim) noteApplied(d *device, path string, old engine.Disk, had bool, rec engine.Disk) {
	d.eng.Applied(d.graph, path, old, had, rec, s.devNow(d))
}
