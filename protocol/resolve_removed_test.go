package protocol

import (
	"slices"
	"testing"
)

// removedCopyHistory is the shape S1 seed 3 reached under load
// (docs/simulation.md, finding 6, the residual): w9 by A and w7 by B meet;
// A's resolution keeps w7 and copies w9 to C. The user on U renames C back
// onto notes.md (a deletion at C, w9 again at notes.md). E writes w23
// without having seen the file; Y resolves {w23, U's w9}: w23 wins and U's
// w9 goes to a second copy C2, named after U. Meanwhile the user on Z
// deleted w23 and Z, which never saw A's resolution, kept A's w9 over that
// deletion. Y's resolution and Z's restatement are each outdated by the
// other (each restates a content the other descends from), so rule 2
// drops neither and they meet as a conflict whose loser is w9 with origin
// A/1: named C, the copy the user renamed away.
type removedCopyHistory struct {
	a1, b1, e1, u1, u2, z2, y1 Version
	c, c2                      string
	a2, z, y                   []Version // resolutions as recorded
}

func newRemovedCopyHistory(t *testing.T) removedCopyHistory {
	t.Helper()
	var h removedCopyHistory
	h.a1 = binary(fileV(1, 1, 1, 0, "\x00w9"))
	h.b1 = binary(fileV(2, 1, 1, 0, "\x00w7"))
	h.e1 = binary(fileV(3, 1, 3, 10, "\x00w23"))
	h.c = ConflictName("notes.md", h.a1, 1)

	g := graphOf(t, h.a1, h.b1)
	d, err := g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Winner.ID != h.b1.ID || len(d.Copies) != 1 || d.Copies[0].Path != h.c {
		t.Fatalf("A's decision: got winner %v copies %+v, want B's w7 kept and w9 copied to %s", d.Winner.ID, d.Copies, h.c)
	}
	h.a2 = recordResolution(g, 1, 2, d) // [w7 at notes.md, w9 at C]

	// U renames C onto notes.md.
	h.u1 = Version{ID: vid(6, 1), Path: h.c, Kind: KindDeletion, Clock: 3, Supersedes: []VersionID{h.a2[1].ID}}
	h.u2 = h.a1
	h.u2.ID, h.u2.Clock, h.u2.Supersedes = VersionID{Author: dev(6), Seq: 1, Index: 1}, 3, []VersionID{h.a2[0].ID}

	// Y resolves {w23, U's w9}.
	g = graphOf(t, append([]Version{h.a1, h.b1, h.e1, h.u1, h.u2}, h.a2...)...)
	d, err = g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.c2 = ConflictName("notes.md", h.u2, 1)
	if d.Winner.ID != h.e1.ID || len(d.Copies) != 1 || d.Copies[0].Path != h.c2 || h.c2 == h.c {
		t.Fatalf("Y's first decision: got winner %v copies %+v, want w23 kept and w9 copied to %s", d.Winner.ID, d.Copies, h.c2)
	}
	h.y = recordResolution(g, 5, 1, d)
	h.y1 = h.y[0]

	// Z: the user deletes w23, then Z keeps A's w9 over the deletion.
	z1 := Version{ID: vid(4, 1), Path: "notes.md", Kind: KindDeletion, Clock: 4, Supersedes: []VersionID{h.e1.ID}}
	g = graphOf(t, h.a1, h.e1, z1)
	d, err = g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeEditBeatsDeletion || d.Winner.ID != h.a1.ID {
		t.Fatalf("Z's decision: got %v winner %v, want w9 beating the deletion", d.Outcome, d.Winner.ID)
	}
	h.z = append([]Version{z1}, recordResolution(g, 4, 2, d)...)
	h.z2 = h.z[1]
	return h
}

func (h removedCopyHistory) all() []Version {
	vs := []Version{h.a1, h.b1, h.e1, h.u1, h.u2}
	vs = append(vs, h.a2...)
	vs = append(vs, h.y...)
	return append(vs, h.z...)
}

// TestRemovedCopyNotResurrected: Y, which has seen U delete C, decides
// {its w23 resolution, Z's w9 restatement}. Old rule: C was free, so Y
// wrote w9 there again as a new version that nothing supersedes, and
// edit-beats-deletion kept it: w9 in two copies (C and C2), the copy the
// user renamed away back. Now the loser is dropped (the user already dealt
// with that copy): no copy, outcome outdated, and w9 stays in C2 only.
func TestRemovedCopyNotResurrected(t *testing.T) {
	h := newRemovedCopyHistory(t)
	g := graphOf(t, h.all()...)
	if hs := g.Heads("notes.md"); len(hs) != 2 {
		t.Fatalf("got %d heads, want Y's and Z's", len(hs))
	}
	if got := g.NameUse(h.c, h.a1); got != NameRemoved {
		t.Errorf("NameUse(C, w9 origin A/1): got %v, want removed", got)
	}
	d, err := g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeOutdated || d.Winner.ID != h.y1.ID || len(d.Copies) != 0 {
		t.Fatalf("got %v winner %v copies %+v, want outdated, Y's w23 kept, no copy", d.Outcome, d.Winner.ID, d.Copies)
	}
	if !slices.ContainsFunc(d.Dropped, func(v Version) bool { return v.ID == h.z2.ID }) {
		t.Errorf("got dropped %v, want Z's w9 among them", ids(d.Dropped))
	}
	if want := []VersionID{h.z2.ID, h.y1.ID}; !slices.Equal(d.Superseded, sortedIDs(want)) {
		t.Errorf("got superseded %v, want both heads", d.Superseded)
	}

	// Carried out, then everyone resolves until quiet: w9 lives in C2 only.
	all := append(h.all(), recordResolution(g, 5, 2, d)...)
	all = settle(t, all, []byte{1, 4, 5, 6})
	g = graphOf(t, all...)
	live := liveContents(g)
	if _, ok := live[h.c]; ok {
		t.Errorf("C (%s) is live again: %v", h.c, live[h.c])
	}
	var at []string
	for p, cs := range live {
		if slices.Contains(cs, h.a1.ContentHash) {
			at = append(at, p)
		}
	}
	if !slices.Equal(at, []string{h.c2}) {
		t.Errorf("w9 lives at %v, want only %s", at, h.c2)
	}
}

// TestRemovedCopyUnseenDeletionReusesCopy: a device that has not seen the
// user delete C yet finds C holding w9 and reuses it (no new version); the
// deletion, once it arrives, removes it as usual.
func TestRemovedCopyUnseenDeletionReusesCopy(t *testing.T) {
	h := newRemovedCopyHistory(t)
	vs := slices.DeleteFunc(h.all(), func(v Version) bool { return v.ID == h.u1.ID })
	g := graphOf(t, vs...)
	d, err := g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeConflict || len(d.Copies) != 1 || d.Copies[0].Path != h.c || !d.Copies[0].Exists {
		t.Fatalf("got %v copies %+v, want conflict with w9 reusing %s", d.Outcome, d.Copies, h.c)
	}
	all := append(h.all(), recordResolution(g, 5, 2, d)...)
	g = graphOf(t, settle(t, all, []byte{1, 4, 5, 6})...)
	if hs := g.Heads(h.c); len(hs) != 1 || hs[0].ID != h.u1.ID {
		t.Errorf("C heads: got %v, want only U's deletion", ids(hs))
	}
}

// TestRenamedBackCopyIsCopiedAgain: the user on A renames C back onto
// notes.md (same author, mtime and content: the new version's copy name is
// C again), and it loses to a concurrent w23. That is a new write, made
// after the deletion of C, and it must be copied: C is free for it.
func TestRenamedBackCopyIsCopiedAgain(t *testing.T) {
	h := newRemovedCopyHistory(t)
	del := Version{ID: VersionID{Author: dev(1), Seq: 3}, Path: h.c, Kind: KindDeletion, Clock: 3, Supersedes: []VersionID{h.a2[1].ID}}
	back := h.a1
	back.ID, back.Clock, back.Supersedes = VersionID{Author: dev(1), Seq: 3, Index: 1}, 3, []VersionID{h.a2[0].ID}
	e := binary(fileV(3, 1, 1, 10, "\x00w23"))
	vs := append([]Version{h.a1, h.b1, e, del, back}, h.a2...)
	g := graphOf(t, vs...)
	if ConflictName("notes.md", back, 1) != h.c {
		t.Fatalf("the renamed-back version's copy name is %s, want %s", ConflictName("notes.md", back, 1), h.c)
	}
	d, err := g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeConflict || len(d.Copies) != 1 || d.Copies[0].Path != h.c || d.Copies[0].Exists {
		t.Fatalf("got %v copies %+v, want w9 copied anew to %s", d.Outcome, d.Copies, h.c)
	}
	// The new copy supersedes the deletion it knowingly writes over (as
	// node/ records it), so it stays.
	all := append(vs, recordResolution(g, 5, 1, d)...)
	g = graphOf(t, settle(t, all, []byte{1, 3, 5})...)
	if live := liveContents(g); !slices.Equal(live[h.c], [][32]byte{h.a1.ContentHash}) {
		t.Errorf("C holds %d contents, want w9 again", len(live[h.c]))
	}
}

// TestDeletedIdenticalCopyStaysDeleted: two devices record the same
// conflict copy (identical heads X and Y at one name); the user on a
// third device deletes the copy while its device has only Y. Old rule: X
// is a concurrent edit, so it beat the deletion and the copy came back.
// Now X is outdated: the deletion's author had exactly this content there
// and deleted it.
func TestDeletedIdenticalCopyStaysDeleted(t *testing.T) {
	x := binary(fileV(1, 1, 2, 0, "\x00w9"))
	x.Path = "notes.conflict-x.md"
	y := x
	y.ID = vid(2, 1)
	del := Version{ID: vid(3, 1), Path: x.Path, Kind: KindDeletion, Clock: 3, Supersedes: []VersionID{y.ID}}
	g := graphOf(t, x, y, del)
	d, err := g.Resolve(x.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeOutdated || d.Winner.ID != del.ID {
		t.Fatalf("got %v winner %v, want outdated with the deletion kept", d.Outcome, d.Winner.ID)
	}
}

// TestConcurrentRevertStillConflicts: B edits c2 to c3 while C reverts c2
// to c1, an older content B's author once had. Only what a head directly
// supersedes counts, so the revert is not outdated: a conflict as before.
func TestConcurrentRevertStillConflicts(t *testing.T) {
	c1 := binary(fileV(1, 1, 1, 0, "\x00c1"))
	c2 := binary(fileV(1, 2, 2, 1, "\x00c2", c1.ID))
	c3 := binary(fileV(2, 1, 3, 2, "\x00c3", c2.ID))
	rev := binary(fileV(3, 1, 3, 3, "\x00c1", c2.ID))
	g := graphOf(t, c1, c2, c3, rev)
	d, err := g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeConflict || len(d.Copies) != 1 {
		t.Fatalf("got %v with %d copies, want a conflict with one copy", d.Outcome, len(d.Copies))
	}
}

// TestNameUseRemoved: the answers around a deleted copy.
func TestNameUseRemoved(t *testing.T) {
	x := binary(fileV(1, 1, 1, 0, "\x00x"))
	y := binary(fileV(2, 1, 1, 0, "\x00y"))
	cp := func(v Version, name string, author byte, clock uint64, sup ...VersionID) Version {
		v.ID, v.Path, v.Clock, v.Supersedes = vid(author, clock), name, clock, sup
		return v
	}
	del := func(name string, author byte, clock uint64, sup ...VersionID) Version {
		return Version{ID: vid(author, clock), Path: name, Kind: KindDeletion, Clock: clock, Supersedes: sup}
	}
	copied := cp(x, "copied", 3, 2)
	early := cp(x, "early", 3, 1) // recorded no later than x: not a copy of it
	other := cp(y, "other", 5, 2)
	g := graphOf(t, x, y, copied, del("copied", 4, 3, copied.ID), early, del("early", 4, 4, early.ID),
		other, del("other", 4, 5, other.ID), del("unknown", 4, 6, vid(9, 9)))
	tests := []struct {
		name string
		want NameUse
	}{
		{"copied", NameRemoved},
		{"early", NameFree},
		{"other", NameFree},   // what was deleted there was another content
		{"unknown", NameFree}, // the deleted version is not known
		{"nothing", NameFree},
	}
	for _, tt := range tests {
		if got := g.NameUse(tt.name, x); got != tt.want {
			t.Errorf("NameUse(%q, x): got %v, want %v", tt.name, got, tt.want)
		}
	}
	if NameRemoved.String() != "removed" {
		t.Errorf("got %q, want removed", NameRemoved.String())
	}
}

// settle lets every author resolve every path with several heads from
// the full set, until nothing more is recorded.
func settle(t *testing.T, all []Version, authors []byte) []Version {
	t.Helper()
	seq := map[byte]uint64{}
	for _, v := range all {
		seq[v.ID.Author[0]] = max(seq[v.ID.Author[0]], v.ID.Seq)
	}
	for round := 0; ; round++ {
		if round > 6 {
			t.Fatal("resolutions did not settle")
		}
		var more []Version
		for _, a := range authors {
			g := graphOf(t, all...)
			for _, p := range g.Paths() {
				if len(g.Heads(p)) < 2 {
					continue
				}
				d, err := g.Resolve(p, nil)
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				if r := recordResolution(g, a, seq[a]+1, d); len(r) > 0 {
					seq[a]++
					more = append(more, r...)
					break // one entry per author per round
				}
			}
		}
		if len(more) == 0 {
			return all
		}
		all = append(all, more...)
	}
}

func sortedIDs(vs []VersionID) []VersionID {
	out := slices.Clone(vs)
	slices.SortFunc(out, VersionID.Compare)
	return out
}

// TestRenamedBackCopyMeetsAnotherResolution is the deterministic tier's
// first finding (docs/simulation.md, seed 164). A wrote w9; B wrote w7 and
// resolved {w9, w7}: w7 kept, w9 copied. C wrote w5 and, without seeing
// B's w7, resolved {w9, w5}: w5 kept, w9 copied to the same name. The user
// on C then renames that copy back onto notes.md. Heads: B's resolution
// (w7) and C's renamed-back w9. Old rule: the w9 head was outdated, because
// B's resolution directly supersedes A's w9 (rule 2's second test); it was
// dropped, the rename had deleted the copy, and w9 was on no disk anywhere.
// Now a head that descends from the very version the other head replaced
// was put back by someone who knew it: it meets w7 as a conflict, and w9
// is copied again under its own name.
func TestRenamedBackCopyMeetsAnotherResolution(t *testing.T) {
	a1 := binary(fileV(1, 1, 1, 0, "\x00w9"))
	b1 := binary(fileV(2, 1, 1, 5, "\x00w7"))
	c1 := binary(fileV(3, 1, 1, 1, "\x00w5"))
	resolve := func(g *Graph, author byte, seq uint64) ([]Version, Version, Version) {
		t.Helper()
		d, err := g.Resolve("notes.md", nil)
		if err != nil {
			t.Fatal(err)
		}
		if d.Winner.ID == a1.ID || len(d.Copies) != 1 || d.Copies[0].Version.ID != a1.ID {
			t.Fatalf("device %d: winner %v copies %+v, want w9 to lose and be copied", author, d.Winner.ID, d.Copies)
		}
		rec := recordResolution(g, author, seq, d)
		var atPath, atCopy Version
		for _, v := range rec {
			if v.Path == "notes.md" {
				atPath = v
			} else {
				atCopy = v
			}
		}
		return rec, atPath, atCopy
	}
	rb, _, copyB := resolve(graphOf(t, a1, b1), 2, 2)
	rc, atPathC, copyC := resolve(graphOf(t, a1, c1), 3, 2)
	if copyB.Path != copyC.Path {
		t.Fatalf("B and C copied w9 to %s and %s, want one name", copyB.Path, copyC.Path)
	}
	del := Version{ID: VersionID{Author: dev(3), Seq: 3}, Path: copyC.Path, Kind: KindDeletion, Clock: 3, Supersedes: []VersionID{copyC.ID}}
	back := a1
	back.ID, back.Clock, back.Supersedes = VersionID{Author: dev(3), Seq: 3, Index: 1}, 3, []VersionID{atPathC.ID}
	back.Time += 60_000

	vs := append([]Version{a1, b1, c1, del, back}, append(rb, rc...)...)
	g := graphOf(t, vs...)
	d, err := g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeConflict || len(d.Copies) != 1 || d.Copies[0].Exists {
		t.Fatalf("got %v winner %v copies %+v, want w7 and the renamed-back w9 in conflict, one copy written anew", d.Outcome, d.Winner.ID, d.Copies)
	}
	all := append(vs, recordResolution(g, 5, 1, d)...)
	g = graphOf(t, settle(t, all, []byte{2, 3, 5})...)
	held := false
	for _, cs := range liveContents(g) {
		held = held || slices.Contains(cs, a1.ContentHash)
	}
	if !held {
		t.Fatal("w9 is at no path once every device has settled: the renamed-back content was lost")
	}
}
