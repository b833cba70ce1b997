package protocol

import "testing"

// TestDeletionOfAResolvedPutBack is docs/simulation.md's finding 5 (seed
// 872 of the deterministic tier): a put-back meets a concurrent edit,
// two devices resolve the conflict alike (one of them the put-back's
// author, whose resolution therefore counts as a put-back itself), and a
// user on the other deletes the file, knowing the resolved content. The
// deletion supersedes that user's own resolution only, but the two
// resolutions are one state: the same content over the same heads. So
// the deletion outdates both, and the file stays deleted; before, the
// put-back's exemption spared its author's resolution and it beat the
// deletion (edit-beats-deletion), bringing the file back everywhere.
func TestDeletionOfAResolvedPutBack(t *testing.T) {
	h := newPutBackHistory(t)
	h.back.Time += 60_000 // the put-back is the latest edit: its content wins, as in seed 872
	g := graphOf(t, h.all()...)
	d, err := g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Winner.ContentHash != h.back.ContentHash {
		t.Fatalf("the put-back's content does not win the conflict (winner %v): the history is not the one this test is about", d.Winner.ID)
	}
	resU := recordResolution(g, 1, 2, d) // the put-back's author
	resX := recordResolution(g, 7, 1, d) // another device, alike
	all := append(append(h.all(), resU...), resX...)
	g = graphOf(t, all...)
	if !g.PutBackSelf(resU[0].ID) {
		t.Fatal("the put-back author's resolution is not taken for a put-back: the exemption this test is about is not in play")
	}
	del := Version{ID: VersionID{Author: dev(7), Seq: 2}, Path: "notes.md", Kind: KindDeletion, Clock: resX[0].Clock + 1, Supersedes: []VersionID{resX[0].ID}}
	all = append(all, del)
	g = graphOf(t, all...)
	d, err = g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Winner.ID != del.ID {
		t.Fatalf("got %v winner %v, want the deletion %v to win: it was made knowing the resolved content", d.Outcome, d.Winner.ID, del.ID)
	}
}

// TestPutBackOfAnOlderRestatementKept: the winner k replaced t, an older
// record of content C (S's resolution of x and y); a device whose index
// still held x moved its copy of C back (a put-back superseding x only).
// t is no twin of the put-back: the put-back does not know y, which t
// superseded. So the put-back meets k as a conflict and C is copied
// again; taking t for a twin (the first form of twinReplaced, found in
// review) dropped it with no copy, and C was on no disk anywhere.
func TestPutBackOfAnOlderRestatementKept(t *testing.T) {
	base := binary(fileV(3, 1, 1, 0, "\x00w62"))
	x := binary(fileV(8, 1, 2, 10, "\x00w85.1", base.ID)) // content C
	y := binary(fileV(5, 1, 2, 5, "\x00w85.2", base.ID))
	gS := graphOf(t, base, x, y)
	dS, err := gS.Resolve("notes.md", nil)
	if err != nil || dS.Winner.ID != x.ID {
		t.Fatalf("S: %v winner %v err %v", dS.Outcome, dS.Winner.ID, err)
	}
	resS := recordResolution(gS, 4, 1, dS) // t: content C, supersedes x and y
	z := binary(fileV(6, 1, 2, 20, "\x00w85.0", base.ID))
	pre := append([]Version{base, x, y, z}, resS...)
	gR := graphOf(t, pre...)
	dR, err := gR.Resolve("notes.md", nil)
	if err != nil || dR.Winner.ID != z.ID || len(dR.Copies) != 1 {
		t.Fatalf("R: %v winner %v copies %+v err %v", dR.Outcome, dR.Winner.ID, dR.Copies, err)
	}
	resR := recordResolution(gR, 9, 1, dR)
	k, cp := resR[0], resR[1] // k (w85.0) supersedes t and z; cp is C's copy
	// U: index still holds x; wrote the copy; user moves it back onto notes.md.
	del := Version{ID: VersionID{Author: dev(1), Seq: 1}, Path: cp.Path, Kind: KindDeletion, Clock: k.Clock + 1, Supersedes: []VersionID{cp.ID}}
	back := x
	back.ID, back.Clock, back.Supersedes = VersionID{Author: dev(1), Seq: 1, Index: 1}, k.Clock+1, []VersionID{x.ID}
	all := append(append(pre, resR...), del, back)
	g := graphOf(t, all...)
	if !g.PutBack(back.ID) {
		t.Fatal("the moved-back version is not a put-back: the history is not the one this test is about")
	}
	d, err := g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	all = append(all, recordResolution(g, 2, 1, d)...)
	if at := settledAt(t, all, x.ContentHash); len(at) != 1 {
		t.Fatalf("moved-back content C lives at %v once settled, want one path (lost)", at)
	}
}
