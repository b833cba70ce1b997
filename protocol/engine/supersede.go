package engine

import (
	"slices"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
)

// LocalSupersedes is what a local change of path supersedes: the version
// the folder index says is on disk (d, when had), and every head with that
// same content (identical heads a resolution left standing). Never a head
// this device has not applied: a remote edit that arrived but is not on
// disk yet must meet the local edit as a concurrent version (a conflict or
// a merge), not be silently overwritten.
//
// A path not in the index (nothing there, as far as this device knows)
// supersedes only the deletion heads there: a deletion describes exactly
// that empty disk, so a file created now comes after it. Left concurrent
// with the deletion, a file put back with the bytes the deletion removed (a
// move back, a restore) looked like a re-recording of the deleted content
// and was dropped: deleted again everywhere (docs/simulation.md, finding 8).
//
// The result is in canonical ID order and at most entry.MaxSupersedes long.
func LocalSupersedes(g *protocol.Graph, path string, d Disk, had bool) []protocol.VersionID {
	var out []protocol.VersionID
	add := func(id protocol.VersionID) {
		if id.Seq > 0 && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if _, known := g.Get(d.Version); had && known {
		add(d.Version)
	}
	for _, h := range g.Heads(path) {
		if had && SameContent(h, d) || !had && h.Kind == protocol.KindDeletion {
			add(h.ID)
		}
	}
	return canonical(out)
}

// HeadHolding returns the head of path whose content is what d says is on
// disk, for a path the folder index does not know. That is a version
// already on disk, not a new one: the folder index was rebuilt (a damaged
// vault database keeps its logs but loses the records), or a crash fell
// between an apply's rename and its index commit. Recording it as a new
// version would send every such file to every device again, as concurrent
// copies of themselves; the index adopts the head instead. Only a head is
// adopted (older content on disk is recorded as usual, and the conflict
// rules drop a stale restatement), and a file only when its executable
// bits agree too.
func HeadHolding(g *protocol.Graph, path string, d Disk) (protocol.VersionID, bool) {
	for _, h := range g.Heads(path) {
		if SameContent(h, d) && (d.Kind != protocol.KindFile || h.Mode&0o111 == d.Mode&0o111) {
			return h.ID, true
		}
	}
	return protocol.VersionID{}, false
}

// CopySupersedes is what a new conflict copy written at name supersedes:
// the version the folder index says is there (d, when had) and the heads
// at name. The core gave the name out as free, so those heads are
// deletions this device has seen, of something other than a copy of this
// content (that would be protocol.NameRemoved); writing the copy over them
// knowingly must not leave them standing, or the core would read a
// deletion that directly replaced this very content (a user who renamed a
// copy back onto its path) as outdating the new copy.
func CopySupersedes(g *protocol.Graph, name string, d Disk, had bool) []protocol.VersionID {
	var out []protocol.VersionID
	if had && d.Version.Seq > 0 {
		out = append(out, d.Version)
	}
	for _, h := range g.Heads(name) {
		if !slices.Contains(out, h.ID) {
			out = append(out, h.ID)
		}
	}
	return canonical(out)
}

// HeadIDs returns the IDs of path's heads in canonical order, at most
// entry.MaxSupersedes of them: what a version that replaces all of them lists.
func HeadIDs(g *protocol.Graph, path string) []protocol.VersionID {
	hs := g.Heads(path)
	out := make([]protocol.VersionID, 0, len(hs))
	for _, h := range hs {
		out = append(out, h.ID)
	}
	return canonical(out)
}

func canonical(ids []protocol.VersionID) []protocol.VersionID {
	slices.SortFunc(ids, protocol.VersionID.Compare)
	if len(ids) > entry.MaxSupersedes {
		ids = ids[:entry.MaxSupersedes]
	}
	return ids
}

// RecordsResolution reports whether carrying out dec records a new version:
// one that supersedes every head (and adds the new conflict copies), so
// that the path settles on one head. A single head, or heads that all hold
// one content, need only the folder index.
func RecordsResolution(dec protocol.Decision) bool {
	return len(dec.Superseded) > 1 && dec.Outcome != protocol.OutcomeIdentical
}

// WritesWinnerOnly reports whether carrying out dec is writing its winner
// and nothing else: no resolution to record, no conflict copy, no merge.
// Such decisions may be carried out in batches (node's small-file path).
func WritesWinnerOnly(dec protocol.Decision) bool {
	return !RecordsResolution(dec) && len(dec.Copies) == 0 && dec.Merge == nil
}

// NewCopy is a conflict copy a decision writes that the graph does not
// hold yet: the loser's body with Path set to the copy's name, and what
// the folder index held at that name before the copy was written.
type NewCopy struct {
	Body entry.Version
	Disk Disk
	Had  bool
}

// Resolution returns the versions, for one entry, that record carrying out
// dec: written (the winner's body as written at the path; for a clean
// merge, with the merged content's size, hash and content) superseding
// every head, so that the path settles on one head; then each new conflict
// copy, superseding what its name held (CopySupersedes). It is nil when
// dec records nothing (RecordsResolution).
func Resolution(g *protocol.Graph, dec protocol.Decision, written entry.Version, copies []NewCopy) []entry.Version {
	if !RecordsResolution(dec) {
		return nil
	}
	res := written
	res.Path = dec.Path
	res.Supersedes = slices.Clone(dec.Superseded)
	out := []entry.Version{res}
	for _, c := range copies {
		v := c.Body
		v.Supersedes = CopySupersedes(g, v.Path, c.Disk, c.Had)
		out = append(out, v)
	}
	return out
}

// SameContentHead returns a head at path with c's kind and content, in
// canonical order: the version a conflict copy that already exists in the
// graph (protocol.ConflictCopy.Exists) is recorded under.
func SameContentHead(g *protocol.Graph, path string, c protocol.Version) (protocol.VersionID, bool) {
	for _, h := range g.Heads(path) {
		if h.Kind == c.Kind && h.ContentHash == c.ContentHash {
			return h.ID, true
		}
	}
	return protocol.VersionID{}, false
}
