package protocol

import (
	"slices"
	"testing"
)

// putBackHistory is the shape S1 seed 2 reached under load (CI, and
// docs/simulation.md, finding 13): E wrote w85.1 and F wrote w85.0 over the
// same base; R resolved them, kept one and copied the other (the loser) to
// C. The user on U, whose device had written C but not yet the winner at
// notes.md (its index still held the base), moved C back onto notes.md:
// one entry with the deletion of C and the loser's content at notes.md,
// superseding the base only.
type putBackHistory struct {
	base, e, f, del, back Version
	res                   []Version // R's resolution: the winner, then the copy
	loser                 Version
	copyName              string
}

func newPutBackHistory(t *testing.T) putBackHistory {
	t.Helper()
	var h putBackHistory
	h.base = binary(fileV(3, 1, 1, 0, "\x00w62"))
	h.e = binary(fileV(8, 1, 2, 10, "\x00w85.1", h.base.ID))
	h.f = binary(fileV(6, 1, 2, 11, "\x00w85.0", h.base.ID))
	g := graphOf(t, h.base, h.e, h.f)
	d, err := g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeConflict || len(d.Copies) != 1 {
		t.Fatalf("R's decision: got %v with copies %+v, want a conflict with one copy", d.Outcome, d.Copies)
	}
	h.loser, h.copyName = d.Copies[0].Version, d.Copies[0].Path
	h.res = recordResolution(g, 9, 1, d)
	if len(h.res) != 2 {
		t.Fatalf("R recorded %d versions, want the winner and the copy", len(h.res))
	}
	h.del = Version{ID: VersionID{Author: dev(1), Seq: 1}, Path: h.copyName, Kind: KindDeletion, Clock: 4, Supersedes: []VersionID{h.res[1].ID}}
	h.back = h.loser
	h.back.ID, h.back.Clock, h.back.Supersedes = VersionID{Author: dev(1), Seq: 1, Index: 1}, 4, []VersionID{h.base.ID}
	return h
}

func (h putBackHistory) all() []Version {
	return append([]Version{h.base, h.e, h.f, h.del, h.back}, h.res...)
}

// TestMovedBackCopyKept: the moved-back content meets R's winner as a
// conflict and is copied again. Old rule: R's winner directly supersedes
// the loser's version at notes.md, which U's version does not descend
// from, so U's version was dropped as an outdated restatement; the move
// had deleted C, and the content was on no disk anywhere.
func TestMovedBackCopyKept(t *testing.T) {
	h := newPutBackHistory(t)
	g := graphOf(t, h.all()...)
	if !g.PutBack(h.back.ID) {
		t.Fatal("PutBack(U's version): got false, want true")
	}
	d, err := g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeConflict || len(d.Copies) != 1 || d.Copies[0].Exists {
		t.Fatalf("got %v winner %v copies %+v dropped %v, want a conflict with the loser's content copied anew", d.Outcome, d.Winner.ID, d.Copies, ids(d.Dropped))
	}
	all := append(h.all(), recordResolution(g, 5, 1, d)...)
	g = graphOf(t, settle(t, all, []byte{1, 5, 9})...)
	var at []string
	for p, cs := range liveContents(g) {
		if slices.Contains(cs, h.loser.ContentHash) {
			at = append(at, p)
		}
	}
	if len(at) != 1 {
		t.Fatalf("the moved-back content lives at %v once every device has settled, want one path", at)
	}
}

// TestPutBackNeedsTheAuthorsOwnRemoval: a version of the content by a
// device that did not remove the copy is no put-back, nor is one its
// author recorded before removing the copy.
func TestPutBackNeedsTheAuthorsOwnRemoval(t *testing.T) {
	h := newPutBackHistory(t)
	other := h.back
	other.ID = VersionID{Author: dev(2), Seq: 1, Index: 1}
	before := h.back
	before.ID = VersionID{Author: dev(1), Seq: 1, Index: 1}
	del := h.del
	del.ID = VersionID{Author: dev(1), Seq: 2}
	for _, tt := range []struct {
		name string
		vs   []Version
		id   VersionID
		want bool
	}{
		{"the same entry", h.all(), h.back.ID, true},
		{"another device's version", append([]Version{h.base, h.e, h.f, h.del, other}, h.res...), other.ID, false},
		{"recorded before the removal", append([]Version{h.base, h.e, h.f, del, before}, h.res...), before.ID, false},
		{"no removal at all", append([]Version{h.base, h.e, h.f, h.back}, h.res...), h.back.ID, false},
		{"the copy itself", h.all(), h.res[1].ID, false},
	} {
		if got := graphOf(t, tt.vs...).PutBack(tt.id); got != tt.want {
			t.Errorf("%s: PutBack got %v, want %v", tt.name, got, tt.want)
		}
	}
}
