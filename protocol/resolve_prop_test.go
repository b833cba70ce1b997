package protocol

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// genHistory draws a random version history of notes.md: each version
// supersedes a random subset of earlier ones, with Lamport clocks that obey
// the rule, mtimes and contents drawn from small pools so that ties and
// identical contents are common.
func genHistory(t *rapid.T) []Version {
	n := rapid.IntRange(1, 9).Draw(t, "versions")
	seq := map[byte]uint64{}
	var vs []Version
	contents := []string{"a\nb\nc\n", "A\nb\nc\n", "a\nb\nC\n", "x\n", "\x00bin"}
	for i := range n {
		author := rapid.ByteRange(1, 4).Draw(t, "author")
		seq[author]++
		var sup []VersionID
		var clock uint64
		if i > 0 {
			for _, p := range rapid.SliceOfNDistinct(rapid.IntRange(0, i-1), 0, 3, rapid.ID[int]).Draw(t, "parents") {
				sup = append(sup, vs[p].ID)
				clock = max(clock, vs[p].Clock)
			}
		}
		clock += uint64(rapid.IntRange(1, 2).Draw(t, "tick"))
		content := rapid.SampledFrom(contents).Draw(t, "content")
		v := fileV(author, seq[author], clock, int64(rapid.IntRange(0, 3).Draw(t, "mtime")), content, sup...)
		v.Text = IsText([]byte(content))
		v.Mode = uint32(rapid.SampledFrom([]int{0o644, 0o755}).Draw(t, "mode"))
		switch rapid.IntRange(0, 14).Draw(t, "kind") {
		case 0:
			v = withKind(v, KindDeletion)
		case 1:
			v = withKind(v, KindDir)
		case 2:
			v = withKind(v, KindSymlink)
		}
		vs = append(vs, v)
	}
	return vs
}

// TestResolveOrderIndependent: the heads and the decision depend only on
// the set of versions, not on the order they are added to the graph or the
// order heads are passed to Resolve.
func TestResolveOrderIndependent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		vs := genHistory(t)
		taken := func(p string, v Version) NameUse { return NameUse((len(p) + int(v.ContentHash[0])) % 3) } // any fixed rule
		var g1 *Graph
		decide := func(order []Version) ([]Version, Decision) {
			g := NewGraph()
			for _, v := range order {
				if err := g.Add(v); err != nil {
					t.Fatalf("Add: %v", err)
				}
			}
			if g1 == nil {
				g1 = g
			}
			heads := g.Heads("notes.md")
			if first, n := g.FirstHead("notes.md"); n != len(heads) || (n > 0 && first.ID != heads[0].ID) {
				t.Fatalf("FirstHead: %v of %d, Heads %v", first.ID, n, ids(heads))
			}
			heads = rapid.Permutation(heads).Draw(t, "heads order")
			d, err := Resolve(heads, g, taken)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			return g.Heads("notes.md"), d
		}
		h1, d1 := decide(vs)
		h2, d2 := decide(rapid.Permutation(vs).Draw(t, "add order"))
		if diff := cmp.Diff(ids(h1), ids(h2)); diff != "" {
			t.Fatalf("heads depend on add order (-first +second):\n%s", diff)
		}
		if diff := cmp.Diff(d1, d2); diff != "" {
			t.Fatalf("decision depends on order (-first +second):\n%s", diff)
		}
		checkDecision(t, g1, h1, d1)
	})
}

// staleHeads returns the heads Resolve's rule 2 drops: those that restate a
// content another head descends from, and files and symlinks whose content
// another head's author directly replaced, unless every head would be
// dropped.
func staleHeads(g *Graph, heads []Version) map[VersionID]bool {
	stale := map[VersionID]bool{}
	if len(heads) < 2 {
		return stale
	}
	for _, h := range heads {
		for _, r := range g.Restates(h.ID) {
			for _, k := range heads {
				if k.ID != h.ID && !sameContent(k, h) && g.Descends(k.ID, r.ID) {
					stale[h.ID] = true
				}
			}
		}
		if h.Kind != KindFile && h.Kind != KindSymlink {
			continue
		}
		for _, k := range heads {
			if k.ID == h.ID || sameContent(k, h) {
				continue
			}
			for _, p := range k.Supersedes {
				// A head that descends from p was put back on purpose.
				if v, ok := g.Get(p); ok && v.Clock < k.Clock && sameContent(v, h) && !g.Descends(h.ID, p) {
					stale[h.ID] = true
				}
			}
		}
	}
	if len(stale) == len(heads) {
		return map[VersionID]bool{}
	}
	return stale
}

// checkDecision checks invariants every decision keeps.
func checkDecision(t *rapid.T, g *Graph, heads []Version, d Decision) {
	stale := staleHeads(g, heads)
	for id := range stale {
		if !slices.ContainsFunc(d.Dropped, func(v Version) bool { return v.ID == id }) {
			t.Fatalf("stale head %v not dropped", id)
		}
	}
	accounted := map[VersionID]int{d.Winner.ID: 1}
	for _, v := range d.Dropped {
		accounted[v.ID]++
	}
	names := map[string]bool{d.Path: true}
	for _, c := range d.Copies {
		accounted[c.Version.ID]++
		if names[c.Path] {
			t.Fatalf("copy name %q used twice or equals the path", c.Path)
		}
		names[c.Path] = true
		if c.Version.Kind == KindDeletion {
			t.Fatalf("a deletion became a conflict copy")
		}
	}
	for _, h := range heads {
		if accounted[h.ID] != 1 {
			t.Fatalf("head %v accounted for %d times, want once", h.ID, accounted[h.ID])
		}
		if stale[h.ID] {
			continue
		}
		if h.Kind != KindDeletion && d.Winner.Kind == KindDeletion {
			t.Fatalf("a deletion won over %v", h.Kind)
		}
		if h.Kind == KindDir && d.Winner.Kind != KindDir {
			t.Fatalf("a %v won over a directory", d.Winner.Kind)
		}
	}
	if len(accounted) != len(heads) {
		t.Fatalf("decision names %d versions, want the %d heads", len(accounted), len(heads))
	}
	if (d.Merge != nil) != (d.Outcome == OutcomeMerge) {
		t.Fatalf("merge plan %v with outcome %v", d.Merge != nil, d.Outcome)
	}
	if (d.Outcome == OutcomeOutdated) != (len(stale) > 0 && len(d.Copies) == 0 && d.Merge == nil && d.Outcome != OutcomeEditBeatsDeletion) {
		t.Fatalf("outcome %v with %d outdated heads", d.Outcome, len(stale))
	}
	if (len(d.Copies) > 0) != (d.Outcome == OutcomeMerge || d.Outcome == OutcomeConflict || d.Outcome == OutcomeKindClash) {
		t.Fatalf("%d copies with outcome %v", len(d.Copies), d.Outcome)
	}
}
