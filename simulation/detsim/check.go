package detsim

import (
	"slices"
	"strings"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
)

// check runs the end-of-run checks (package doc).
func (s *sim) check() {
	ref := s.devs[0]
	// Every device holds every log entry (heal exchanged them all).
	for _, d := range s.devs[1:] {
		if !slices.Equal(d.authors(), ref.authors()) {
			s.fail("dev%d holds logs of %d authors, dev0 of %d", d.idx, len(d.logs), len(ref.logs))
			return
		}
		for _, a := range ref.authors() {
			if len(d.logs[a]) != len(ref.logs[a]) {
				s.fail("dev%d holds %d entries of %x, dev0 %d", d.idx, len(d.logs[a]), a[:1], len(ref.logs[a]))
			}
		}
	}
	// Convergence: every disk is the same tree.
	paths := sortedKeys(ref.disk)
	for _, d := range s.devs[1:] {
		if got := sortedKeys(d.disk); !slices.Equal(got, paths) {
			s.fail("did not converge: dev%d has files %q, dev0 %q", d.idx, got, paths)
			continue
		}
		for _, p := range paths {
			if !sameBytes(d.disk[p], ref.disk[p]) {
				s.fail("did not converge: %s differs between dev%d and dev0", p, d.idx)
			}
		}
	}
	s.res.Files = len(paths)
	// Every disk holds what its graph says: one content per path (several
	// heads only when they hold the same content), on disk; deletions
	// absent.
	for _, d := range s.devs {
		for _, p := range d.graph.Paths() {
			hs := d.graph.Heads(p)
			if len(hs) == 0 {
				continue
			}
			for _, h := range hs[1:] {
				if h.Kind != hs[0].Kind || h.ContentHash != hs[0].ContentHash {
					s.fail("dev%d: %s settled with %d heads of different content", d.idx, p, len(hs))
					break
				}
			}
			b, onDisk := d.disk[p]
			switch {
			case hs[0].Kind == protocol.KindDeletion && onDisk:
				s.fail("dev%d: %s is deleted in the graph but on disk", d.idx, p)
			case hs[0].Kind == protocol.KindFile && !onDisk:
				s.fail("dev%d: %s is in the graph but not on disk", d.idx, p)
			case hs[0].Kind == protocol.KindFile && hashOf(b) != hs[0].ContentHash:
				s.fail("dev%d: %s on disk is not the graph's head", d.idx, p)
			}
		}
		for _, p := range sortedKeys(d.disk) {
			if len(d.graph.Heads(p)) == 0 {
				s.fail("dev%d: %s is on disk but no version records it", d.idx, p)
			}
		}
	}
	// Conflict copies (S1's copy checks): no copy of a copy (users edit no
	// copy, so a copy's name never loses a conflict), and no content held
	// by two copies of one path (each loser is copied once, under a name
	// derived from its content).
	type copyKey struct {
		origin string
		hash   [32]byte
	}
	copies := map[copyKey][]string{}
	for _, p := range paths {
		i := strings.Index(p, conflictMark)
		if i < 0 {
			continue
		}
		if strings.Count(p, conflictMark) > 1 {
			s.fail("copy of a conflict copy: %s", p)
		}
		k := copyKey{p[:i], hashOf(ref.disk[p])}
		copies[k] = append(copies[k], p)
	}
	// A content put at one path by two versions independently (two users
	// writing the same bytes, a rename or a restore onto the path, the
	// same merge made twice) has two origins, and each origin that loses is
	// copied under its own name: that is two copies by design.
	origins := map[copyKey]int{}
	for _, o := range s.origins {
		origins[copyKey{copyStem(o.path), o.hash}]++
	}
	for _, p := range paths {
		i := strings.Index(p, conflictMark)
		if i < 0 {
			continue
		}
		k := copyKey{p[:i], hashOf(ref.disk[p])}
		if ps := copies[k]; len(ps) > 1 && ps[0] == p && origins[k] < 2 {
			s.fail("one content in %d conflict copies: %s", len(ps), strings.Join(ps, ", "))
		}
	}
	// No lost write: every content a user's write recorded is on the disk
	// (at its path or as a conflict copy), or someone knowingly replaced
	// it (a user who saw it on disk and edited or deleted it, or a clean
	// merge that kept its changes).
	onDisk := map[[32]byte]bool{}
	for _, b := range ref.disk {
		onDisk[hashOf(b)] = true
	}
	for _, w := range s.userFiles {
		if !onDisk[w.hash] && s.replaced[w.hash] == 0 {
			s.fail("lost write: version %s (%x) is on no disk and nobody replaced it knowingly", vid(w.id), w.hash[:4])
		}
	}
	s.checkGuard(ref, onDisk)
}

// restoredFile is a file a user's rejection of held local deletions
// brought back: the content the index recorded at path on device dev.
type restoredFile struct {
	path string
	hash [32]byte
	dev  int
}

// acceptedDeletion is a deletion recorded (as version id, on device dev)
// after its user accepted it past the mass-delete guard: of the content
// hash at path. origins is how many origins there were then: a user who
// put the content back at path later is exempt from the undone check.
type acceptedDeletion struct {
	path    string
	hash    [32]byte
	id      protocol.VersionID
	dev     int
	origins int
}

// checkGuard checks what the mass-delete guard and the users' decisions
// must leave (the knowledge is the checker's own: what the users deleted,
// accepted and rejected):
//   - no deletion is held at the end (the users decided every hold);
//   - a rejected local deletion brought the file back: the content is on
//     the disk, unless someone knowingly replaced it (the rejection took
//     the user's deletion back, so it does not count);
//   - an accepted deletion is not undone: the deleted content is not at
//     its path in a version that descends from the deletion, unless a user
//     put that content there again after the accept.
func (s *sim) checkGuard(ref *device, onDisk map[[32]byte]bool) {
	for _, d := range s.devs {
		if d.eng.Deletes.Holding() {
			s.fail("dev%d still holds deletions at the end: local %q, incoming %q", d.idx, d.eng.Deletes.HeldLocal().Paths, d.eng.Deletes.HeldIncoming().Paths)
		}
	}
	for _, r := range s.restored {
		if !onDisk[r.hash] && s.replaced[r.hash] == 0 {
			s.fail("rejected deletion not restored: %s (%x) on dev%d is on no disk and nobody replaced it knowingly", r.path, r.hash[:4], r.dev)
		}
	}
	for _, a := range s.accepted {
		for _, h := range ref.graph.Heads(a.path) {
			if h.Kind != protocol.KindFile || h.ContentHash != a.hash || !ref.graph.Descends(h.ID, a.id) {
				continue
			}
			again := false
			for _, o := range s.origins[a.origins:] {
				again = again || (o.path == a.path && o.hash == a.hash && !o.kept)
			}
			if !again && concurrentHolder(ref, a) {
				// The deletion met a version holding the content that its
				// author had not seen, and lost to it (Resolve's rule 3,
				// edit beats deletion): the protocol's choice, not the
				// guard's. A twin of what the deletion replaced does not
				// count (docs/simulation.md, deterministic finding 5).
				s.tracef("accepted deletion of %s lost to a concurrent version of %x", a.path, a.hash[:4])
				again = true
			}
			if !again {
				s.fail("accepted deletion undone: %s (%x), deleted by %s after dev%d's user accepted it, is back as %s", a.path, a.hash[:4], vid(a.id), a.dev, vid(h.ID))
			}
		}
	}
}

// conflictMark is what every conflict copy's name holds
// (protocol.ConflictName).
const conflictMark = ".conflict-"

// copyStem is the part of path a conflict copy's name starts with: the
// path up to the base name's last dot (protocol.ConflictName).
func copyStem(path string) string {
	base := strings.LastIndexByte(path, '/') + 1
	if dot := strings.LastIndexByte(path[base:], '.'); dot > 0 {
		return path[:base+dot]
	}
	return path
}

// concurrentHolder reports whether d's graph holds a version of a's
// content at a's path that is concurrent with a's deletion: neither
// descends from the other.
func concurrentHolder(d *device, a acceptedDeletion) bool {
	del, _ := d.graph.Get(a.id)
	for id, v := range d.bodies { // an existence test: map order cannot matter
		if v.Path == a.path && v.Kind == entry.KindFile && v.Hash == a.hash &&
			!d.graph.Descends(a.id, id) && !d.graph.Descends(id, a.id) && !twinOfReplaced(d.graph, del, id) {
			return true
		}
	}
	return false
}

// twinOfReplaced reports whether version id is a twin of a version t the
// deletion del directly supersedes: the same content at the same path,
// neither descending from the other, t knowing every version id restates
// (at least one) and id knowing every version t supersedes. The deletion's
// user saw that state, so a twin of it is not a version the user had not
// seen. (The checker's own statement of the rule protocol.Resolve's
// twinReplaced applies.)
func twinOfReplaced(g *protocol.Graph, del protocol.Version, id protocol.VersionID) bool {
	v, ok := g.Get(id)
	if !ok {
		return false
	}
	rs := g.Restates(id)
	if len(rs) == 0 {
		return false
	}
	for _, p := range del.Supersedes {
		t, ok := g.Get(p)
		if !ok || t.Path != v.Path || t.Kind != v.Kind || t.ContentHash != v.ContentHash || g.Descends(id, p) || g.Descends(p, id) {
			continue
		}
		twin := true
		for _, r := range rs {
			twin = twin && g.Descends(p, r.ID)
		}
		for _, q := range t.Supersedes {
			twin = twin && g.Descends(id, q)
		}
		if twin {
			return true
		}
	}
	return false
}
