package protocol

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
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
	if at := settledAt(t, all, h.loser.ContentHash); len(at) != 1 {
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

// putBackReference is PutBack as first written (e6a6182): a pass over the
// path's versions for id and for each version it restates. The one-pass
// PutBack must agree with it on every version of every history.
func putBackReference(g *Graph, id VersionID) bool {
	v, ok := g.versions[id]
	if !ok || (v.Kind != KindFile && v.Kind != KindSymlink) {
		return false
	}
	for _, h := range append([]Version{*v}, g.Restates(id)...) {
		tried := map[string]bool{}
		for _, o := range g.paths[h.Path] {
			if o.Kind == KindDeletion || !sameContent(*o, h) {
				continue
			}
			for n := 1; n <= maxCopyCounter; n++ {
				name := ConflictName(h.Path, *o, n)
				if tried[name] {
					continue
				}
				tried[name] = true
				at := g.paths[name]
				if len(at) == 0 {
					break
				}
				for _, x := range at {
					if x.Kind != KindDeletion || x.ID.Author != h.ID.Author || x.ID.Seq > h.ID.Seq {
						continue
					}
					for _, p := range x.Supersedes {
						if pv, ok := g.versions[p]; ok && pv.Path == name && sameContent(*pv, h) {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

// TestPutBackMatchesReference: on random histories of notes.md with
// copies of its contents at their conflict-copy names (any of counters
// 1-3, so a name can be missing below one that is there)
// and deletions of them by random authors at random sequence numbers,
// PutBack answers as the per-restated-version reference does.
func TestPutBackMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		vs := genHistory(t)
		index := uint32(100)
		for _, o := range slices.Clone(vs) {
			if o.Kind == KindDeletion || o.Kind == KindDir || !rapid.Bool().Draw(t, "copied") {
				continue
			}
			for _, k := range rapid.SliceOfNDistinct(rapid.IntRange(1, 3), 1, 3, rapid.ID[int]).Draw(t, "counters") {
				index++
				c := o
				c.ID = VersionID{Author: dev(rapid.ByteRange(1, 4).Draw(t, "copier")), Seq: uint64(rapid.IntRange(1, 6).Draw(t, "copy seq")), Index: index}
				c.Path, c.Clock, c.Supersedes = ConflictName(o.Path, o, k), o.Clock+1, nil
				vs = append(vs, c)
				if !rapid.Bool().Draw(t, "removed") {
					continue
				}
				index++
				d := withKind(c, KindDeletion)
				d.ID = VersionID{Author: dev(rapid.ByteRange(1, 4).Draw(t, "remover")), Seq: uint64(rapid.IntRange(1, 6).Draw(t, "removal seq")), Index: index}
				d.Clock, d.Supersedes = c.Clock+1, []VersionID{c.ID}
				vs = append(vs, d)
			}
		}
		g := NewGraph()
		for _, v := range vs {
			if err := g.Add(v); err != nil {
				t.Fatalf("Add %v: %v", v.ID, err)
			}
		}
		for _, v := range vs {
			if got, want := g.PutBack(v.ID), putBackReference(g, v.ID); got != want {
				t.Fatalf("PutBack(%v at %s): got %v, the reference says %v", v.ID, v.Path, got, want)
			}
		}
	})
}

// BenchmarkPutBackManyRestated is the review's shape: a path with
// thousands of versions of one content, each restating the one before
// (resolutions that kept it), and one removed copy of it by another
// device, so no version is a put-back and PutBack looks at every name.
// The reference took seconds at 4,000; PutBack is one pass.
func BenchmarkPutBackManyRestated(b *testing.B) {
	const n = 4000
	g := NewGraph()
	var prev []VersionID
	var first Version
	for i := range n {
		v := fileV(byte(1+i%4), uint64(1+i/4), uint64(1+i), int64(i), "kept", prev...)
		if i == 0 {
			first = v
		}
		if err := g.Add(v); err != nil {
			b.Fatal(err)
		}
		prev = []VersionID{v.ID}
	}
	c := first
	c.ID, c.Path, c.Clock, c.Supersedes = VersionID{Author: dev(9), Seq: 1}, ConflictName(first.Path, first, 1), 2, nil
	d := withKind(c, KindDeletion)
	d.ID, d.Clock, d.Supersedes = VersionID{Author: dev(8), Seq: 1}, 3, []VersionID{c.ID}
	for _, v := range []Version{c, d} {
		if err := g.Add(v); err != nil {
			b.Fatal(err)
		}
	}
	last := prev[0]
	if g.PutBack(last) {
		b.Fatal("PutBack: got true, want false (the copy's remover wrote none of these)")
	}
	b.ResetTimer()
	for range b.N {
		g.PutBack(last)
	}
}

// TestSecondPutBackKept: the same user moves the loser's content back a
// second time. U moved R's copy C1 back onto notes.md (P1), which then lost
// to a later edit W2 and was copied again, at C2, named after P1 (U's
// device and the mtime the copies keep). U's device, whose index still held
// P1 (it had the copy but not R's winner yet), moved C2 back too: P2
// restates P1, so its content's origin is P1 and its copy would be named
// C2 again, where U's own move left a deletion of a copy of this content
// recorded after P1. Rule 7 read that as a copy a user removed and dropped
// P2: the content was on no disk anywhere. A put-back's copy is removed
// only by a deletion recorded after the put-back itself.
func TestSecondPutBackKept(t *testing.T) {
	h := newPutBackHistory(t)
	// U's first move-back supersedes R's winner this time (U's index held it).
	p1 := h.loser
	p1.ID, p1.Clock, p1.Supersedes = VersionID{Author: dev(1), Seq: 1, Index: 1}, 4, []VersionID{h.res[0].ID}
	w2 := binary(fileV(7, 1, 5, 30, "\x00w90", h.res[0].ID))
	all := []Version{h.base, h.e, h.f, h.del, p1, w2}
	all = append(all, h.res...)
	g := graphOf(t, all...)
	d, err := g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeConflict || d.Winner.ID != w2.ID || len(d.Copies) != 1 || d.Copies[0].Version.ID != p1.ID {
		t.Fatalf("W2 against P1: got %v winner %v copies %+v dropped %v, want W2 to win and P1 copied", d.Outcome, d.Winner.ID, d.Copies, ids(d.Dropped))
	}
	c2Name := d.Copies[0].Path
	res2 := recordResolution(g, 5, 1, d) // W2 restated, P1 copied to C2
	all = append(all, res2...)

	// U moves C2 back; its index still holds P1 at notes.md.
	del2 := Version{ID: VersionID{Author: dev(1), Seq: 2}, Path: c2Name, Kind: KindDeletion, Clock: res2[0].Clock + 1, Supersedes: []VersionID{res2[1].ID}}
	p2 := p1
	p2.ID, p2.Clock, p2.Supersedes = VersionID{Author: dev(1), Seq: 2, Index: 1}, res2[0].Clock+1, []VersionID{p1.ID}
	all = append(all, del2, p2)
	g = graphOf(t, all...)
	if !g.PutBack(p2.ID) {
		t.Fatal("PutBack(P2): got false, want true")
	}
	d, err = g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeConflict || len(d.Copies) != 1 || d.Copies[0].Version.ContentHash != h.loser.ContentHash {
		t.Fatalf("after the second move-back: got %v winner %v copies %+v dropped %v, want the moved-back content copied", d.Outcome, d.Winner.ID, d.Copies, ids(d.Dropped))
	}
	all = append(all, recordResolution(g, 5, 2, d)...)
	if at := settledAt(t, all, h.loser.ContentHash); len(at) != 1 {
		t.Fatalf("the twice moved-back content lives at %v once every device has settled, want one path", at)
	}
}

// TestOwnCopyMovedBackKept: the loser's own device, whose index still held
// its version at the path (it had the copy, not yet the winner), moves the
// copy back: the file's content does not change, and node records a
// version restating it beside the copy's deletion (node,
// TestMovedBackCopyOntoSameContentRecorded). That restatement is a
// put-back: it meets the winner as a conflict, and the content survives.
func TestOwnCopyMovedBackKept(t *testing.T) {
	base := binary(fileV(3, 1, 1, 0, "\x00base"))
	mine := binary(fileV(1, 1, 2, 10, "\x00mine", base.ID))
	theirs := binary(fileV(8, 1, 2, 20, "\x00theirs", base.ID))
	g := graphOf(t, base, mine, theirs)
	d, err := g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeConflict || d.Winner.ID != theirs.ID || len(d.Copies) != 1 {
		t.Fatalf("got %v winner %v copies %+v, want theirs to win and mine copied", d.Outcome, d.Winner.ID, d.Copies)
	}
	res := recordResolution(g, 9, 1, d)
	del := Version{ID: VersionID{Author: dev(1), Seq: 2}, Path: d.Copies[0].Path, Kind: KindDeletion, Clock: res[0].Clock + 1, Supersedes: []VersionID{res[1].ID}}
	back := mine
	back.ID, back.Clock, back.Supersedes = VersionID{Author: dev(1), Seq: 2, Index: 1}, res[0].Clock+1, []VersionID{mine.ID}
	all := append([]Version{base, mine, theirs, del, back}, res...)
	g = graphOf(t, all...)
	if !g.PutBack(back.ID) {
		t.Fatal("PutBack(the restatement): got false, want true")
	}
	d, err = g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeConflict || len(d.Copies) != 1 {
		t.Fatalf("got %v winner %v copies %+v dropped %v, want a conflict that copies one side", d.Outcome, d.Winner.ID, d.Copies, ids(d.Dropped))
	}
	all = append(all, recordResolution(g, 5, 1, d)...)
	settled := settle(t, all, []byte{1, 5, 9})
	for _, c := range []Version{mine, theirs} {
		if at := settledAt(t, settled, c.ContentHash); len(at) != 1 {
			t.Fatalf("content of %v lives at %v once settled, want one path", c.ID, at)
		}
	}
}

// settledAt settles all on devices 1, 5 and 9 (settle) and returns the
// paths whose live heads hold content.
func settledAt(t *testing.T, all []Version, content [32]byte) []string {
	t.Helper()
	var at []string
	for p, cs := range liveContents(graphOf(t, settle(t, all, []byte{1, 5, 9})...)) {
		if slices.Contains(cs, content) {
			at = append(at, p)
		}
	}
	return at
}

// TestDeletedCopyOfAKeptPutBackStaysDeleted (review of ee89618): a
// resolution by another device that merely kept a put-back's content is
// not itself a put-back. U put back P1; device 5 resolved it against a
// later W2 and copied it to C2, which the user then deleted; device 4,
// whose clock ran high elsewhere and which had not seen W2, kept P1's
// content. Asking PutBack (which counts restated versions) of device 4's
// head spared it from rule 2 and measured rule 7 against its clock, and
// C2 was written again. Only PutBackSelf is asked there now.
func TestDeletedCopyOfAKeptPutBackStaysDeleted(t *testing.T) {
	h := newPutBackHistory(t)
	h.back.Time = (t0 + 25e9) / 1e6 // the move happened after e and f
	base := h.all()
	w2 := binary(fileV(7, 1, 5, 30, "\x00w90", h.res[0].ID))

	// Device 5 sees back and W2: W2 wins, back copied to C2.
	g5 := graphOf(t, append(base, w2)...)
	d, err := g5.Resolve("notes.md", nil)
	if err != nil || d.Outcome != OutcomeConflict || len(d.Copies) != 1 || d.Copies[0].Version.ID != h.back.ID {
		t.Fatalf("device 5: %v %+v %v", d.Outcome, d.Copies, err)
	}
	res2 := recordResolution(g5, 5, 1, d)
	c2 := res2[1]
	// The user deletes C2 on purpose.
	del2 := Version{ID: vid(5, 2), Path: c2.Path, Kind: KindDeletion, Clock: c2.Clock + 1, Supersedes: []VersionID{c2.ID}}

	// Device 4, busy elsewhere (high clock), sees res[0] and back, not W2.
	other := fileV(4, 1, 50, 1, "other")
	other.Path = "other.md"
	g4 := graphOf(t, append(base, other)...)
	d4, err := g4.Resolve("notes.md", nil)
	if err != nil || d4.Winner.ContentHash != h.back.ContentHash {
		t.Fatalf("device 4: %v winner %v %v", d4.Outcome, d4.Winner.ID, err)
	}
	res4 := recordResolution(g4, 4, 2, d4)
	t.Logf("device 4 kept back's content: %v clock %d; C2 clock %d", d4.Outcome, res4[0].Clock, c2.Clock)

	all := append(append(append(append(base, w2, other), res2...), del2), res4...)
	g := graphOf(t, all...)
	for _, hd := range g.Heads("notes.md") {
		t.Logf("head %v clock %d putback %v", hd.ID, hd.Clock, g.PutBack(hd.ID))
	}
	d, err = g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("final: %v winner %v copies %+v dropped %v", d.Outcome, d.Winner.ID, d.Copies, ids(d.Dropped))
	for _, c := range d.Copies {
		if c.Path == c2.Path {
			t.Fatalf("copy %s, which the user deleted, is written again", c.Path)
		}
	}
}

// TestEditedPutBackNotCopiedAgain (review of ee89618): U's user edits
// the content it put back; a resolution elsewhere that kept the put-back,
// made before the edit arrived, is outdated by the edit and must not
// bring the edited-away content back as a copy.
func TestEditedPutBackNotCopiedAgain(t *testing.T) {
	h := newPutBackHistory(t)
	h.back.Time = (t0 + 25e9) / 1e6
	base := h.all()
	// U's user edits the content it put back (knowingly replaces it).
	x := binary(fileV(1, 2, 5, 40, "\x00x", h.back.ID))
	// Device 4 had resolved {R's winner, back} keeping back, not seeing X.
	g4 := graphOf(t, base...)
	d4, _ := g4.Resolve("notes.md", nil)
	res4 := recordResolution(g4, 4, 1, d4)
	g := graphOf(t, append(append(base, x), res4...)...)
	d, err := g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v winner %v copies %d dropped %v", d.Outcome, d.Winner.ID, len(d.Copies), ids(d.Dropped))
	for _, c := range d.Copies {
		if c.Version.ContentHash == h.back.ContentHash {
			t.Fatalf("the content U's user edited away is copied again at %s", c.Path)
		}
	}
}

// TestPutBackLooksPastAGap (review of db8f503): two origins with the same
// author and mtime give the same copy names; a removed copy at counter 2
// with nothing known at counter 1 (its entry has not arrived) is found by
// the second origin, as e6a6182's PutBack found it.
func TestPutBackLooksPastAGap(t *testing.T) {
	o1 := fileV(1, 1, 1, 0, "k")
	o2 := fileV(1, 3, 5, 0, "k", o1.ID) // same author, same mtime: restates o1
	c := o1
	c.ID, c.Path, c.Clock, c.Supersedes = vid(2, 1), ConflictName(o1.Path, o1, 2), 2, nil
	d := withKind(c, KindDeletion)
	d.ID, d.Clock, d.Supersedes = vid(1, 2), 3, []VersionID{c.ID}
	g := graphOf(t, o1, o2, c, d)
	t.Logf("restates %v", ids(g.Restates(o2.ID)))
	if got, want := g.PutBack(o2.ID), putBackReference(g, o2.ID); got != want {
		t.Fatalf("PutBack(o2) got %v, reference %v", got, want)
	}
}

// TestPutBackKeptWhenAConcurrentCopyIsSettledAway (deterministic tier,
// finding 4, seed 27428): d1 lost to W and copied its L to N, then moved
// the copy back (P). dev3, not knowing any of that and with a clock that
// ran high elsewhere, resolved {L, W} too and made the same copy at N;
// then it edited the file (E). N's heads, d1's deletion and dev3's copy,
// settle as outdated (a deletion superseding both). P then loses to E,
// and its copy's name is N, where a deletion now descends from a copy of
// L recorded with a clock above P's: rule 7 read that as a user removing
// P's copy and dropped P. dev3's copy was made without knowing P, so it
// is not; P is copied again.
func TestPutBackKeptWhenAConcurrentCopyIsSettledAway(t *testing.T) {
	base := binary(fileV(9, 1, 1, 0, "\x00base"))
	l := binary(fileV(1, 1, 2, 10, "\x00L", base.ID))
	w := binary(fileV(3, 1, 2, 20, "\x00W", base.ID))
	g1 := graphOf(t, base, l, w)
	d1, err := g1.Resolve("notes.md", nil)
	if err != nil || d1.Winner.ID != w.ID || len(d1.Copies) != 1 {
		t.Fatalf("d1's decision: %v winner %v copies %+v (%v)", d1.Outcome, d1.Winner.ID, d1.Copies, err)
	}
	n := d1.Copies[0].Path
	res1 := recordResolution(g1, 1, 2, d1)
	del := Version{ID: VersionID{Author: dev(1), Seq: 3}, Path: n, Kind: KindDeletion, Clock: res1[0].Clock + 1, Supersedes: []VersionID{res1[1].ID}}
	back := l
	back.ID, back.Clock, back.Supersedes = VersionID{Author: dev(1), Seq: 3, Index: 1}, res1[0].Clock+1, []VersionID{res1[0].ID}

	other := fileV(3, 2, 50, 1, "other")
	other.Path = "other.md"
	g3 := graphOf(t, base, l, w, other)
	d3, err := g3.Resolve("notes.md", nil)
	if err != nil || len(d3.Copies) != 1 || d3.Copies[0].Path != n {
		t.Fatalf("dev3's decision: %v copies %+v (%v), want the copy at %s", d3.Outcome, d3.Copies, err, n)
	}
	res3 := recordResolution(g3, 3, 3, d3)
	if res3[1].Clock <= back.Clock {
		t.Fatalf("precondition: dev3's copy has clock %d, not above the put-back's %d", res3[1].Clock, back.Clock)
	}
	e := binary(fileV(3, 4, res3[0].Clock+1, 40, "\x00E", res3[0].ID))

	all := []Version{base, l, w, other, del, back, e}
	all = append(append(all, res1...), res3...)
	g := graphOf(t, all...)
	dn, err := g.Resolve(n, nil)
	if err != nil || dn.Outcome != OutcomeOutdated {
		t.Fatalf("the copy name's decision: %v (%v), want outdated", dn.Outcome, err)
	}
	all = append(all, recordResolution(g, 5, 1, dn)...) // the settlement
	g = graphOf(t, all...)
	d, err := g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeConflict || len(d.Copies) != 1 || d.Copies[0].Version.ID != back.ID {
		t.Fatalf("P against E: got %v winner %v copies %+v dropped %v, want P copied", d.Outcome, d.Winner.ID, d.Copies, ids(d.Dropped))
	}
	all = append(all, recordResolution(g, 5, 2, d)...)
	if at := settledAt(t, all, l.ContentHash); len(at) != 1 {
		t.Fatalf("the moved-back content lives at %v once settled, want one path", at)
	}
}
