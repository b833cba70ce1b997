package protocol

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// flipGraph is the shape S1 seed 3 reached under load (docs/simulation.md,
// finding 6): two text contents P and Q met as concurrent edits; one
// device's resolution kept P, another's kept Q (each superseding both).
// Neither resolution is outdated (each restates a content the other
// descends from), and both P0 and Q0 are nearest common ancestors.
func flipGraph(t *testing.T) (*Graph, Version, Version) {
	t.Helper()
	p0 := fileV(1, 1, 1, 0, "P\n")
	q0 := fileV(2, 1, 1, 1, "Q\n")
	keepP := fileV(3, 1, 2, 0, "P\n", p0.ID, q0.ID)
	keepQ := fileV(4, 1, 2, 1, "Q\n", p0.ID, q0.ID)
	g := NewGraph()
	for _, v := range []Version{p0, q0, keepP, keepQ} {
		if err := g.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	return g, keepP, keepQ
}

// TestResolveNoMergeAgainstARestatedBase: a three-way merge from base P
// would read the head that kept P as unchanged and give the path to Q
// (from base Q, the other way round), so which content wins would depend
// on which common ancestor a device's graph picks, and every merge was a
// new version that flipped the path again on devices that saw other
// heads. The heads are ranked instead, like any conflict.
func TestResolveNoMergeAgainstARestatedBase(t *testing.T) {
	g, keepP, keepQ := flipGraph(t)
	d, err := g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeConflict {
		t.Fatalf("got outcome %v (merge plan %+v), want conflict", d.Outcome, d.Merge)
	}
	// Q0's origin has the later mtime, so Q keeps the name.
	if d.Winner.ID != keepQ.ID {
		t.Errorf("got winner %v, want %v (keeps Q)", d.Winner.ID, keepQ.ID)
	}
	if len(d.Copies) != 1 || d.Copies[0].Version.ID != keepP.ID {
		t.Errorf("got copies %+v, want one copy of %v", d.Copies, keepP.ID)
	}
}

// TestResolveStillMergesTrueEdits: both sides changed the base: merge.
func TestResolveStillMergesTrueEdits(t *testing.T) {
	base := fileV(1, 1, 1, 0, "a\nb\nc\n")
	x := fileV(2, 1, 2, 1, "A\nb\nc\n", base.ID)
	y := fileV(3, 1, 2, 2, "a\nb\nC\n", base.ID)
	g := NewGraph()
	for _, v := range []Version{base, x, y} {
		if err := g.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	d, err := g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeMerge || d.Merge == nil || d.Merge.Base.ID != base.ID {
		t.Fatalf("got outcome %v plan %+v, want merge from %v", d.Outcome, d.Merge, base.ID)
	}
}

// TestConcurrentTextResolutionsConvergeProperty is
// TestConcurrentResolutionsConvergeProperty with text edits, so decisions
// may plan merges. Each device carries a merge out as node/ does for
// one-line texts: clean only when a single side differs from the base,
// recorded as that content with a fresh mtime; otherwise the winner and
// copies. Devices resolve from random subsets of what exists, round
// after round, then from everything until nothing more is recorded; the
// path must settle on one content (on the old rule 6 it flipped between
// two contents: docs/simulation.md, finding 6).
func TestConcurrentTextResolutionsConvergeProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := fileV(1, 1, 1, 0, "base\n")
		n := rapid.IntRange(2, 3).Draw(t, "edits")
		text := map[[32]byte]string{base.ContentHash: "base\n"}
		var edits []Version
		for i := range n {
			s := fmt.Sprintf("edit %d\n", i)
			e := fileV(byte(2+i), 1, 2, int64(rapid.IntRange(0, 2).Draw(t, "mtime")), s, base.ID)
			text[e.ContentHash] = s
			edits = append(edits, e)
		}
		seq := map[byte]uint64{}
		now := int64(100)
		resolveAs := func(author byte, vs []Version) []Version {
			g := NewGraph()
			for _, v := range vs {
				if err := g.Add(v); err != nil {
					t.Fatalf("Add: %v", err)
				}
			}
			d, err := g.Resolve("notes.md", nil)
			if err != nil {
				t.Fatalf("device %d: Resolve: %v", author, err)
			}
			seq[author]++
			out := recordResolution(g, author, 1+seq[author], d)
			if d.Outcome != OutcomeMerge || len(out) == 0 {
				return out
			}
			var changed [][32]byte
			for _, s := range d.Merge.Sides {
				if s.ContentHash != d.Merge.Base.ContentHash && !slices.Contains(changed, s.ContentHash) {
					changed = append(changed, s.ContentHash)
				}
			}
			if len(changed) != 1 {
				return out // conflicting lines: the fallback, as recorded
			}
			now++
			res := out[0]
			res.ContentHash, res.Size = changed[0], uint64(len(text[changed[0]]))
			res.MTime = t0 + now*1e9
			res.Time = res.MTime / 1e6
			return []Version{res}
		}
		all := append([]Version{base}, edits...)
		for round := 1; ; round++ {
			if round > 12 {
				t.Fatalf("resolutions did not settle: %d versions", len(all))
			}
			var more []Version
			for _, e := range edits {
				seen := all
				if round <= 4 {
					seen = nil
					for _, v := range all {
						if v.ID == base.ID || v.ID.Author == e.ID.Author || rapid.Bool().Draw(t, "seen") {
							seen = append(seen, v)
						}
					}
				}
				more = append(more, resolveAs(e.ID.Author[0], seen)...)
			}
			if len(more) == 0 && round > 4 {
				break
			}
			all = append(all, more...)
		}
		g := NewGraph()
		for _, v := range all {
			if err := g.Add(v); err != nil {
				t.Fatalf("Add: %v", err)
			}
		}
		d, err := g.Resolve("notes.md", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Copies) != 0 || d.Outcome == OutcomeMerge {
			t.Fatalf("settled path still asks for a %v with %d copies", d.Outcome, len(d.Copies))
		}
	})
}
