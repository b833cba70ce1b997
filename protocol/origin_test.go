package protocol

import "testing"

// TestOrigin: a version that changed the content is its own origin; a
// resolution (by another device) that kept a head's content has that
// head as its origin, and so does a second resolution restating the
// first; an unknown ID has none.
func TestOrigin(t *testing.T) {
	g := NewGraph()
	base := fileV('a', 1, 1, 0, "base")
	ours := fileV('a', 2, 2, 10, "a's edit", base.ID)
	theirs := fileV('b', 1, 2, 20, "b's edit", base.ID)
	kept := fileV('c', 1, 3, 30, "b's edit", ours.ID, theirs.ID) // c resolved: b's content won
	again := fileV('a', 3, 4, 40, "b's edit", kept.ID)           // a restated it
	for _, v := range []Version{base, ours, theirs, kept, again} {
		if err := g.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		id, want VersionID
	}{{ours.ID, ours.ID}, {kept.ID, theirs.ID}, {again.ID, theirs.ID}} {
		if o, ok := g.Origin(c.id); !ok || o.ID != c.want {
			t.Errorf("origin of %v: %v (%v), want %v", c.id, o.ID, ok, c.want)
		}
	}
	if _, ok := g.Origin(vid('z', 9)); ok {
		t.Error("an unknown version has an origin")
	}
}
