package detsim

import (
	"slices"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
)

// The mass-delete guard (engine.DeleteGuard), fed as node's massdelete.go
// and deletions.go feed it: scans through JudgeLocal (scan.go), reconcile
// passes through Release and JudgeIncoming (device.go), and the user's
// decisions through Accept, DropLocal and DropIncoming (below).

// guardIndex is d's folder index and graph as the guard reads them
// (engine.GuardIndex; node's guardIndex).
type guardIndex struct {
	s *sim
	d *device
}

func (s *sim) guardIndex(d *device) guardIndex { return guardIndex{s, d} }

func (g guardIndex) Lookup(p string) (engine.Disk, bool) {
	r, ok := g.d.index[p]
	return r, ok
}

// Files counts the index's records: every one is a file here.
func (g guardIndex) Files() int { return len(g.d.index) }

// DeletionConfirmed is node's deletionConfirmedLocked: every head of p is
// a deletion its author's user confirmed.
func (g guardIndex) DeletionConfirmed(p string) bool {
	if g.s.cfg.TestOnlyIgnoreConfirmed {
		return false
	}
	hs := g.d.graph.Heads(p)
	for _, h := range hs {
		if h.Kind != protocol.KindDeletion || h.Mode&entry.DeletionConfirmed == 0 {
			return false
		}
	}
	return len(hs) > 0
}

func (g guardIndex) WinnerIsDeletion(p string) bool { return engine.IsDeletion(g.d.graph, p) }

// Graph is d's version graph (engine.View).
func (g guardIndex) Graph() *protocol.Graph { return g.d.graph }

// noteIncomingHold traces what a reconcile pass's JudgeIncoming held, and
// checks it against what the users decided: a deletion a user accepted is
// applied on every device, never held again for another user (the check
// is the simulation's own knowledge of the accepts, not the guard's).
func (s *sim) noteIncomingHold(d *device, dels []string, v engine.IncomingVerdict) {
	if v.Began {
		s.res.Holds++
		s.tracef("dev%d holds incoming deletions: %d of %d files (%q...)", d.idx, v.HeldFiles, v.IndexFiles, v.Sample)
	} else if v.NewlyHeld > 0 {
		s.tracef("dev%d holds %d more incoming deletions", d.idx, v.NewlyHeld)
	}
	for _, p := range dels {
		if slices.Contains(v.Apply, p) {
			continue
		}
		hs := d.graph.Heads(p)
		accepted := len(hs) > 0
		for _, h := range hs {
			accepted = accepted && s.acceptedIDs[h.ID]
		}
		if accepted {
			s.fail("accepted deletion held: dev%d holds the deletion of %s (%s), which a user accepted", d.idx, p, vids(engine.HeadIDs(d.graph, p)))
		}
	}
}

// massDelete is a user deleting many files on d's disk at once: more than
// half of them, sometimes all.
func (s *sim) massDelete(d *device) {
	onDisk := sortedKeys(d.disk)
	if len(onDisk) < 2 {
		return
	}
	n := len(onDisk)/2 + 1 + s.rng.IntN(len(onDisk)-len(onDisk)/2)
	picked := s.rng.Perm(len(onDisk))[:min(n, len(onDisk))]
	slices.Sort(picked)
	s.tracef("dev%d mass delete: %d of %d files", d.idx, len(picked), len(onDisk))
	for _, i := range picked {
		s.userDelete(d, onDisk[i])
	}
}

// decideSome is a user deciding about held deletions at some step after
// the hold began: one device that holds some (seeded), accepting or
// rejecting (seeded).
func (s *sim) decideSome() error {
	var holding []*device
	for _, d := range s.devs {
		if d.eng.Deletes.Holding() {
			holding = append(holding, d)
		}
	}
	if len(holding) == 0 {
		return nil
	}
	d := holding[s.rng.IntN(len(holding))]
	return s.decide(d, s.rng.IntN(2) == 0)
}

// decide is d's user accepting (accept) or rejecting every deletion d
// holds, as node's acceptDeletions and rejectDeletions carry it out.
func (s *sim) decide(d *device, accept bool) error {
	local, incoming := d.eng.Deletes.HeldLocal().Paths, d.eng.Deletes.HeldIncoming().Paths
	if accept {
		s.res.Accepts++
		s.tracef("dev%d user accepts the held deletions: local %q, incoming %q", d.idx, local, incoming)
		local, incoming = d.eng.Deletes.Accept()
		d.eng.Step(engine.Touched{Paths: incoming}) // applied by the next reconcile
		if len(local) > 0 {
			// Recorded now, with entry.DeletionConfirmed.
			return s.scanPaths(d, local, engine.ScanSettled)
		}
		return nil
	}
	s.res.Rejects++
	s.tracef("dev%d user rejects the held deletions: local %q, incoming %q", d.idx, local, incoming)
	if len(local) > 0 {
		s.rewriteDeleted(d, local)
	}
	if len(incoming) > 0 {
		if err := s.reassert(d, incoming); err != nil {
			return err
		}
		d.eng.Deletes.DropIncoming(incoming, s.guardIndex(d))
	}
	return nil
}

// rewriteDeleted brings back the files whose local deletion d held (node's
// rewriteDeleted): each one still gone loses its index record, so the
// next reconcile finds its head not on disk and writes it. The user's
// deletion is taken back: the content it removed is no longer knowingly
// replaced by it, and must be on a disk at the end (check.go).
func (s *sim) rewriteDeleted(d *device, paths []string) {
	for _, p := range paths {
		if _, ok := d.disk[p]; ok {
			continue
		}
		if cur, had := d.index[p]; had {
			if h, ok := d.deletedBy[p]; ok && h == cur.ContentHash {
				s.replaced[h]--
			}
			s.restored = append(s.restored, restoredFile{path: p, hash: cur.ContentHash, dev: d.idx})
		}
		delete(d.deletedBy, p)
		delete(d.index, p)
		d.eng.Step(engine.Touched{Paths: []string{p}})
	}
	d.eng.Deletes.DropLocal()
}

// reassert records what is on d's disk at paths as new versions that
// supersede the held deletions there (node's reassert and
// recordRestored): the index records are dropped so each file is met as
// new, and one whose every head is a deletion supersedes them all.
func (s *sim) reassert(d *device, paths []string) error {
	for _, p := range paths {
		delete(d.index, p)
	}
	for _, p := range paths {
		b, ok := d.disk[p]
		if !ok {
			continue
		}
		delete(d.unscanned, p)
		now := fileDisk(b)
		if id, ok := engine.HeadHolding(d.graph, p, now); ok {
			now.Version = id
			d.index[p] = now
			s.tracef("dev%d keeps %s: adopted head %s", d.idx, p, vid(id))
			continue
		}
		sup := s.supersedesFor(d, p, engine.Disk{}, false, now)
		if heads, settled := deletionHeads(d.graph, p); settled && len(heads) > 0 {
			sup = heads
		}
		if err := s.recordFile(d, p, b, now, sup, true, "keeps"); err != nil {
			return err
		}
	}
	return nil
}

// deletionHeads is node's appliedHeadsLocked for a path the index no
// longer records: its heads when every one is a deletion (ok), in
// canonical order and at most entry.MaxSupersedes of them.
func deletionHeads(g *protocol.Graph, path string) ([]protocol.VersionID, bool) {
	var ids []protocol.VersionID
	for _, h := range g.Heads(path) {
		if h.Kind != protocol.KindDeletion {
			return nil, false
		}
		ids = append(ids, h.ID)
	}
	slices.SortFunc(ids, func(a, b protocol.VersionID) int { return a.Compare(b) })
	return ids[:min(len(ids), entry.MaxSupersedes)], true
}
