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
