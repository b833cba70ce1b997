package protocol

import (
	"fmt"
	"iter"
	"slices"

	"github.com/weftsync/weft/protocol/keys"
)

// Graph is the version graph of a folder: every known version, indexed by
// path, with the supersedes edges between them. Versions may be added in any
// order, including a version whose superseded versions are not yet known;
// every query answers from the versions known so far, and the answer for a
// given set of versions does not depend on the order they were added in.
//
// An edge "X supersedes Y" counts only while it is consistent with the
// Lamport rule: Y unknown, or Y.Clock < X.Clock. An edge that breaks the
// rule is ignored (a buggy or hostile author cannot hide a version, or make
// a cycle); the version it names then stays a head and is resolved like any
// concurrent version.
//
// Graph is not safe for concurrent use. Versions returned share their
// Supersedes slices with the graph; callers must not modify them.
type Graph struct {
	versions map[VersionID]*Version
	// children maps a version ID, known or not, to the known versions that
	// list it in Supersedes.
	children map[VersionID][]VersionID
	// paths holds each path's versions in the order they were added, as
	// the versions themselves (8 bytes each, where an ID took 48 and a
	// lookup in versions).
	paths map[string][]*Version
}

// NewGraph returns an empty graph.
func NewGraph() *Graph {
	return &Graph{
		versions: make(map[VersionID]*Version),
		children: make(map[VersionID][]VersionID),
		paths:    make(map[string][]*Version),
	}
}

// Grow makes room for n versions in an empty graph, so that adding them
// does not grow its maps step by step (rehashing every version added so
// far at each step: a third of the cost of rebuilding a graph of 100,000
// versions from a snapshot, docs/benchmarks.md). The paths get room for n
// too, as if each version had a path of its own (the most they can need).
// Grow does nothing to a graph that holds versions, or for n <= 0.
func (g *Graph) Grow(n int) {
	if n <= 0 || len(g.versions) > 0 {
		return
	}
	g.versions = make(map[VersionID]*Version, n)
	g.paths = make(map[string][]*Version, n)
}

// Add records a version. Adding a version that is already known with the
// same fields does nothing. It returns an error wrapping ErrInvalidVersion
// for a malformed version, or ErrDuplicateVersion when the ID is known with
// different fields; in both cases the graph is unchanged.
func (g *Graph) Add(v Version) error {
	if err := v.Validate(); err != nil {
		return err
	}
	if old, ok := g.versions[v.ID]; ok {
		if !sameVersion(*old, v) {
			return fmt.Errorf("version %v of %q: %w", v.ID, v.Path, ErrDuplicateVersion)
		}
		return nil
	}
	v.Supersedes = slices.Clone(v.Supersedes)
	g.versions[v.ID] = &v
	g.paths[v.Path] = append(g.paths[v.Path], &v)
	for _, p := range v.Supersedes {
		if !slices.Contains(g.children[p], v.ID) {
			g.children[p] = append(g.children[p], v.ID)
		}
	}
	return nil
}

func sameVersion(a, b Version) bool {
	return a.ID == b.ID && a.Path == b.Path && a.Kind == b.Kind && a.ContentHash == b.ContentHash &&
		a.Size == b.Size && a.Mode == b.Mode && a.MTime == b.MTime && a.Clock == b.Clock && a.Time == b.Time &&
		a.Text == b.Text && slices.Equal(a.Supersedes, b.Supersedes)
}

// Get returns the version with the given ID, if known.
func (g *Graph) Get(id VersionID) (Version, bool) {
	v, ok := g.versions[id]
	if !ok {
		return Version{}, false
	}
	return *v, true
}

// Len returns the number of known versions.
func (g *Graph) Len() int { return len(g.versions) }

// All iterates over every known version, in no particular order. The graph
// must not change during the iteration.
func (g *Graph) All() iter.Seq[Version] {
	return func(yield func(Version) bool) {
		for _, v := range g.versions {
			if !yield(*v) {
				return
			}
		}
	}
}

// At iterates over every known version at path (heads or not), in the
// order they were added. Its cost is the path's history, not the graph's.
func (g *Graph) At(path string) iter.Seq[Version] {
	return func(yield func(Version) bool) {
		for _, v := range g.paths[path] {
			if !yield(*v) {
				return
			}
		}
	}
}

// Paths returns every path that has a known version, sorted.
func (g *Graph) Paths() []string {
	out := make([]string, 0, len(g.paths))
	for p := range g.paths {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// validEdge reports whether child superseding parent counts (see Graph).
func (g *Graph) validEdge(child *Version, parent VersionID) bool {
	p, ok := g.versions[parent]
	return !ok || p.Clock < child.Clock
}

// superseded reports whether some known version validly supersedes id.
func (g *Graph) superseded(id VersionID) bool {
	for _, c := range g.children[id] {
		if g.validEdge(g.versions[c], id) {
			return true
		}
	}
	return false
}

// Heads returns the current heads of path: its known versions that no known
// version supersedes, in canonical ID order. A path with one head is
// settled; several heads are concurrent versions for Resolve. A path whose
// versions are all superseded by versions at other paths (a rename written
// as a deletion is still a version at the old path) has no heads.
func (g *Graph) Heads(path string) []Version {
	var out []Version
	for _, v := range g.paths[path] {
		if !g.superseded(v.ID) {
			out = append(out, *v)
		}
	}
	slices.SortFunc(out, func(a, b Version) int { return a.ID.Compare(b.ID) })
	return out
}

// FirstHead returns the first of Heads(path) (the head with the smallest
// ID) and how many heads path has, without building the list: for callers
// that ask only "one head, and which" of every path (a restart at 100,000
// paths spent 0.29 s of CPU in Heads' allocations). first is the zero
// Version when n is 0.
func (g *Graph) FirstHead(path string) (first Version, n int) {
	for _, v := range g.paths[path] {
		if g.superseded(v.ID) {
			continue
		}
		if n == 0 || v.ID.Compare(first.ID) < 0 {
			first = *v
		}
		n++
	}
	return first, n
}

// Dangling returns the IDs that versions of path supersede but that are not
// known yet, in canonical order. While a path has dangling references its
// heads may still shrink: an unknown version may link a head to a later one.
// node/ should fetch the missing entries before it acts on the path's
// Resolve decision (they arrive with the log sync, since an author only
// supersedes versions it has).
func (g *Graph) Dangling(path string) []VersionID {
	var out []VersionID
	for _, v := range g.paths[path] {
		for _, p := range v.Supersedes {
			if _, ok := g.versions[p]; !ok && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	slices.SortFunc(out, VersionID.Compare)
	return out
}

// ancestors returns the known versions reachable from id through valid
// supersedes edges, including id itself if known.
func (g *Graph) ancestors(id VersionID) map[VersionID]bool {
	seen := make(map[VersionID]bool)
	v, ok := g.versions[id]
	if !ok {
		return seen
	}
	seen[id] = true
	stack := []*Version{v}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range c.Supersedes {
			pv, ok := g.versions[p]
			if !ok || seen[p] || !g.validEdge(c, p) {
				continue
			}
			seen[p] = true
			stack = append(stack, pv)
		}
	}
	return seen
}

// Descends reports whether version a descends from version b: a == b, or b
// is reachable from a through supersedes edges among known versions. It is
// false when either is unknown.
func (g *Graph) Descends(a, b VersionID) bool {
	if _, ok := g.versions[b]; !ok {
		return false
	}
	return g.ancestors(a)[b]
}

// CommonAncestor returns the nearest common ancestor of the given versions:
// a known version from which all of them descend and that no other such
// version descends from. When there are several (criss-cross histories), it
// picks the one that wins WinnerOrder, so every device picks the same. ok is
// false when the versions share no known ancestor, or ids is empty.
func (g *Graph) CommonAncestor(ids ...VersionID) (v Version, ok bool) {
	if len(ids) == 0 {
		return Version{}, false
	}
	common := g.ancestors(ids[0])
	for _, id := range ids[1:] {
		other := g.ancestors(id)
		for c := range common {
			if !other[c] {
				delete(common, c)
			}
		}
	}
	// Every ancestor of a common ancestor is common too, so a common
	// ancestor is not nearest exactly when it is a direct parent of another.
	dominated := make(map[VersionID]bool)
	for c := range common {
		cv := g.versions[c]
		for _, p := range cv.Supersedes {
			if common[p] && g.validEdge(cv, p) {
				dominated[p] = true
			}
		}
	}
	var best *Version
	for c := range common {
		if dominated[c] {
			continue
		}
		if cv := g.versions[c]; best == nil || WinnerOrder(*cv, *best) > 0 {
			best = cv
		}
	}
	if best == nil {
		return Version{}, false
	}
	return *best, true
}

// Restates returns the known versions that version id restates: the
// versions at its path with its content (kind and hash) reachable from it
// through valid supersedes edges that never leave that content, id itself
// excluded, in canonical ID order. A resolution that keeps a head's content,
// and a copy recorded again at its name, restate what they supersede; a
// version that changed the content restates nothing. The result is empty
// when id is unknown.
func (g *Graph) Restates(id VersionID) []Version {
	v, ok := g.versions[id]
	if !ok {
		return nil
	}
	seen := map[VersionID]bool{id: true}
	var out []Version
	stack := []*Version{v}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range c.Supersedes {
			pv, ok := g.versions[p]
			if !ok || seen[p] || !g.validEdge(c, p) || pv.Path != v.Path || !sameContent(*pv, *v) {
				continue
			}
			seen[p] = true
			out = append(out, *pv)
			stack = append(stack, pv)
		}
	}
	slices.SortFunc(out, func(a, b Version) int { return a.ID.Compare(b.ID) })
	return out
}

// Origin returns the version that first put id's content at its path:
// id itself when it restates nothing, else the origin among what it
// restates (as Resolve ranks and names conflict copies by it). A
// resolution that kept a head's content has that head's author and
// modification time as its origin. ok is false when id is unknown.
func (g *Graph) Origin(id VersionID) (Version, bool) {
	v, ok := g.versions[id]
	if !ok {
		return Version{}, false
	}
	return originOf(*v, g.Restates(id)), true
}

// NameUse answers Resolve's question about a candidate conflict-copy name
// from the graph, for a loser whose origin is content (Resolve passes the
// origin: the version that first put the loser's content at its path):
//
//   - NameTaken when a live (non-deletion) head at name has other content;
//   - NameHolds when every live head there has content's kind and hash;
//   - NameRemoved when name has no live head and a deletion head there
//     descends from a version at name with content's kind and hash recorded
//     after content (a higher Lamport clock): a copy of this very content
//     was made there and a user then deleted it or renamed it away;
//   - NameFree otherwise (nothing there, or deletions of something else).
//
// The clock test tells a copy of this content apart from a copy of an
// earlier content that had the same name: a copy is recorded by a device
// that held its origin, so its clock is higher than the origin's; a user
// who renames a copy back onto its path and sees it lose again makes a new
// origin, recorded after the deletion, and its copy is written again.
func (g *Graph) NameUse(name string, content Version) NameUse {
	use := NameFree
	var dels []Version
	for _, h := range g.Heads(name) {
		switch {
		case h.Kind == KindDeletion:
			dels = append(dels, h)
		case sameContent(h, content):
			use = NameHolds
		default:
			return NameTaken
		}
	}
	if use == NameFree && g.copyRemoved(name, dels, content) {
		return NameRemoved
	}
	return use
}

// RemovedKnowing is NameUse's NameRemoved test for the copy of a put-back
// (back): a deletion head at name descends from a version there with
// content's kind and hash, a clock above content's, and recorded in an
// entry that knew back (one of that entry's versions at back's path
// descends from back: the resolution that made the copy decided against
// the put-back). A copy of the same content that a device made without
// knowing the put-back (its resolution decided against the content's
// earlier version) and that the name's own decision then settled away
// is not the user removing the put-back's copy (docs/simulation.md,
// deterministic finding 4).
func (g *Graph) RemovedKnowing(name string, content Version, back VersionID) bool {
	b, ok := g.versions[back]
	if !ok {
		return false
	}
	for _, d := range g.Heads(name) {
		if d.Kind != KindDeletion {
			continue
		}
		for id := range g.ancestors(d.ID) {
			x := g.versions[id]
			if x.Path != name || x.Kind == KindDeletion || !sameContent(*x, content) || x.Clock <= content.Clock {
				continue
			}
			for _, y := range g.paths[b.Path] {
				if y.ID.Author == x.ID.Author && y.ID.Seq == x.ID.Seq && g.Descends(y.ID, back) {
					return true
				}
			}
		}
	}
	return false
}

// copyRemoved reports whether one of the deletions at name descends from a
// version at name with content's kind and hash and a higher clock than
// content (see NameUse).
func (g *Graph) copyRemoved(name string, dels []Version, content Version) bool {
	for _, d := range dels {
		for id := range g.ancestors(d.ID) {
			x := g.versions[id]
			if x.Path == name && x.Kind != KindDeletion && sameContent(*x, content) && x.Clock > content.Clock {
				return true
			}
		}
	}
	return false
}

// Resolve returns the decision for path's current heads:
// Resolve(g.Heads(path), g, use), where a nil use means g.NameUse.
// A path with no heads returns an error wrapping ErrNoHeads.
func (g *Graph) Resolve(path string, use NameUseFunc) (Decision, error) {
	if use == nil {
		use = g.NameUse
	}
	return Resolve(g.Heads(path), g, use)
}

// PutBack reports whether version id puts a content back at its path
// after its own author removed that content's conflict copy: id, or a
// version it restates, is a file or symlink whose author recorded, in the
// same entry or an earlier one (same author, sequence number no higher),
// the deletion of a version holding this content at one of the path's
// conflict-copy names. That is what a user who moves a conflict copy back
// onto its file leaves (one entry, node/local.go withMovedCopies), or one
// who deletes a copy and later writes its content back: a choice made
// knowing the copy is gone, which Resolve must treat as a new write, not as
// a stale restatement (rule 2's second test): dropped as one, the content
// was on no disk anywhere (docs/simulation.md, finding 13).
//
// Left open (docs/simulation.md, finding 13): a put-back that then loses
// is named after itself, but the same device putting the content back a
// second time keeps the author and mtime that name it, so its copy's name
// is the one it just moved away, and rule 7 (NameRemoved) or a stale
// identical copy there (NameHolds) can still drop it.
//
// Copies are named after a version at the path with their content (their
// origin: ConflictName, from the origin's author, mtime and content), so
// the candidate names are found from the path's own versions, without a
// walk over every path. id and everything it restates share path and
// content, so the names are found once, and one pass decides for all of
// them: a deletion counts when some version among them has its author and
// a sequence number at or above it. The cost is one pass over the path's
// versions plus the versions at those names, not one pass per restated
// version.
func (g *Graph) PutBack(id VersionID) bool {
	v, ok := g.versions[id]
	if !ok || (v.Kind != KindFile && v.Kind != KindSymlink) {
		return false
	}
	// The highest sequence number of each author among id and what it
	// restates: a deletion by that author at or below it counts.
	latest := map[keys.DeviceID]uint64{v.ID.Author: v.ID.Seq}
	for _, r := range g.Restates(id) {
		latest[r.ID.Author] = max(latest[r.ID.Author], r.ID.Seq)
	}
	return g.putBack(*v, latest)
}

// PutBackSelf is PutBack of id alone, not of what it restates: id's own
// author removed the copy. A resolution by another device that kept a
// put-back's content restates the put-back, but its author removed
// nothing; where Resolve would otherwise drop a head that restates a
// content replaced since (rule 2's first test) or take a copy's removal
// as recorded before the content (rule 7), only the put-back itself is a
// choice made knowing the copy is gone.
func (g *Graph) PutBackSelf(id VersionID) bool {
	v, ok := g.versions[id]
	if !ok || (v.Kind != KindFile && v.Kind != KindSymlink) {
		return false
	}
	return g.putBack(*v, map[keys.DeviceID]uint64{v.ID.Author: v.ID.Seq})
}

// putBack is PutBack's search for a version with v's path and content: a
// deletion, by an author of latest at or below that author's sequence
// number, of a version with v's content at one of the conflict-copy names
// of the path's versions with v's content. Like the first form of
// PutBack (e6a6182), a name tried for an earlier origin is skipped, not
// taken for the end of the names, so a later origin with the same names
// looks past it (TestPutBackMatchesReference).
func (g *Graph) putBack(v Version, latest map[keys.DeviceID]uint64) bool {
	tried := map[string]bool{}
	for _, o := range g.paths[v.Path] {
		if o.Kind == KindDeletion || !sameContent(*o, v) {
			continue
		}
		for n := 1; n <= maxCopyCounter; n++ {
			name := ConflictName(v.Path, *o, n)
			if tried[name] {
				continue
			}
			tried[name] = true
			at := g.paths[name]
			if len(at) == 0 {
				break // a counter is given only past a name that is taken
			}
			if g.removedBy(at, name, v, latest) {
				return true
			}
		}
	}
	return false
}

// maxCopyCounter bounds the counter PutBack tries in a copy's name; a name
// is given a counter only when a user's own file holds the name before it.
const maxCopyCounter = 64

// removedBy reports whether one of the versions at name (ids) is a
// deletion, by an author in latest at or below that author's sequence
// number, of a version at name with v's content.
func (g *Graph) removedBy(at []*Version, name string, v Version, latest map[keys.DeviceID]uint64) bool {
	for _, x := range at {
		if seq, ok := latest[x.ID.Author]; x.Kind != KindDeletion || !ok || x.ID.Seq > seq {
			continue
		}
		for _, p := range x.Supersedes {
			if pv, ok := g.versions[p]; ok && pv.Path == name && sameContent(*pv, v) {
				return true
			}
		}
	}
	return false
}
