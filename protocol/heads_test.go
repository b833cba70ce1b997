package protocol

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func buildGraph(t *testing.T, vs ...Version) *Graph {
	t.Helper()
	g := NewGraph()
	for _, v := range vs {
		if err := g.Add(v); err != nil {
			t.Fatalf("Add(%v): %v", v.ID, err)
		}
	}
	return g
}

func TestHeads(t *testing.T) {
	a1 := fileV(1, 1, 1, 0, "a")
	b1 := fileV(2, 1, 2, 1, "b", a1.ID)
	c1 := fileV(3, 1, 2, 2, "c", a1.ID)
	m := fileV(1, 2, 3, 3, "m", b1.ID, c1.ID)
	orphan := fileV(4, 7, 9, 4, "o", vid(5, 1)) // supersedes an unknown version
	tests := []struct {
		name         string
		versions     []Version
		wantHeads    []VersionID
		wantDangling []VersionID
	}{
		{"one", []Version{a1}, []VersionID{a1.ID}, nil},
		{"chain", []Version{a1, b1}, []VersionID{b1.ID}, nil},
		{"child before parent", []Version{b1, a1}, []VersionID{b1.ID}, nil},
		{"child alone dangles", []Version{b1}, []VersionID{b1.ID}, []VersionID{a1.ID}},
		{"fork", []Version{a1, c1, b1}, []VersionID{b1.ID, c1.ID}, nil},
		{"fork joined", []Version{m, c1, a1, b1}, []VersionID{m.ID}, nil},
		{"join known before a side", []Version{a1, m, b1}, []VersionID{m.ID}, []VersionID{c1.ID}},
		{"unknown parent", []Version{a1, orphan}, []VersionID{a1.ID, orphan.ID}, []VersionID{vid(5, 1)}},
		{"duplicate add", []Version{a1, a1, b1, b1}, []VersionID{b1.ID}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := buildGraph(t, tt.versions...)
			if first, n := g.FirstHead("notes.md"); n != len(tt.wantHeads) || (n > 0 && first.ID != tt.wantHeads[0]) {
				t.Errorf("FirstHead: %v of %d, want the first of %v", first.ID, n, tt.wantHeads)
			}
			if diff := cmp.Diff(tt.wantHeads, ids(g.Heads("notes.md"))); diff != "" {
				t.Errorf("Heads (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDangling, g.Dangling("notes.md")); diff != "" {
				t.Errorf("Dangling (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGrowKeepsAnswers: a graph given room first (Grow) answers as one
// grown by Add alone, and Grow leaves a graph that holds versions as it
// is.
func TestGrowKeepsAnswers(t *testing.T) {
	a1 := fileV(1, 1, 1, 0, "a")
	b1 := fileV(2, 1, 2, 1, "b", a1.ID)
	c1 := fileV(3, 1, 2, 2, "c", a1.ID)
	grown := NewGraph()
	grown.Grow(3)
	for _, v := range []Version{a1, b1, c1} {
		if err := grown.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	late := buildGraph(t, a1, b1)
	late.Grow(10) // holds versions: nothing changes
	if err := late.Add(c1); err != nil {
		t.Fatal(err)
	}
	for _, g := range []*Graph{grown, late} {
		if g.Len() != 3 {
			t.Errorf("Len: got %d, want 3", g.Len())
		}
		if diff := cmp.Diff([]VersionID{b1.ID, c1.ID}, ids(g.Heads("notes.md"))); diff != "" {
			t.Errorf("Heads (-want +got):\n%s", diff)
		}
		if got, ok := g.Get(a1.ID); !ok || got.ID != a1.ID {
			t.Errorf("Get(%v): got %v, %v", a1.ID, got.ID, ok)
		}
	}
}

func TestHeadsIgnoreEdgesAgainstLamport(t *testing.T) {
	// a and b claim to supersede each other; only the edge that agrees
	// with the Lamport clocks counts, so no cycle forms.
	a := fileV(1, 1, 5, 0, "a", vid(2, 1))
	b := fileV(2, 1, 3, 0, "b", a.ID)
	g := buildGraph(t, a, b)
	// a validly supersedes b (5 > 3); b's claim on a is ignored, so a is
	// the one head rather than neither.
	if diff := cmp.Diff([]VersionID{a.ID}, ids(g.Heads("notes.md"))); diff != "" {
		t.Errorf("Heads (-want +got):\n%s", diff)
	}
	if g.Descends(b.ID, a.ID) {
		t.Errorf("Descends(b, a): got true, want false (edge breaks the Lamport rule)")
	}
	if !g.Descends(a.ID, b.ID) {
		t.Errorf("Descends(a, b): got false, want true")
	}
}

func TestHeadsOtherPath(t *testing.T) {
	a := fileV(1, 1, 1, 0, "a")
	other := fileV(1, 2, 2, 0, "a")
	other.Path = "renamed.md"
	other.Supersedes = []VersionID{a.ID}
	g := buildGraph(t, a, other)
	if got := g.Heads("notes.md"); len(got) != 0 {
		t.Errorf("Heads(notes.md): got %v, want none", ids(got))
	}
	if diff := cmp.Diff([]string{"notes.md", "renamed.md"}, g.Paths()); diff != "" {
		t.Errorf("Paths (-want +got):\n%s", diff)
	}
	if _, err := g.Resolve("notes.md", nil); !errors.Is(err, ErrNoHeads) {
		t.Errorf("Resolve of a path with no heads: got %v, want ErrNoHeads", err)
	}
}

func TestGraphAddErrors(t *testing.T) {
	a := fileV(1, 1, 1, 0, "a")
	g := buildGraph(t, a)
	changed := a
	changed.ContentHash = hashOf("other")
	if err := g.Add(changed); !errors.Is(err, ErrDuplicateVersion) {
		t.Errorf("Add of a changed duplicate: got %v, want ErrDuplicateVersion", err)
	}
	if got, _ := g.Get(a.ID); got.ContentHash != a.ContentHash {
		t.Errorf("after a rejected duplicate: got content %x, want the first", got.ContentHash[:4])
	}
	if err := g.Add(Version{ID: vid(1, 2)}); !errors.Is(err, ErrInvalidVersion) {
		t.Errorf("Add of an invalid version: got %v, want ErrInvalidVersion", err)
	}
	if g.Len() != 1 {
		t.Errorf("Len: got %d, want 1", g.Len())
	}
}

func TestDescendsAndCommonAncestor(t *testing.T) {
	// a1 <- b1 <- b2, a1 <- c1; criss-cross: x and y both supersede b1 and c1.
	a1 := fileV(1, 1, 1, 0, "a")
	b1 := fileV(2, 1, 2, 1, "b", a1.ID)
	b2 := fileV(2, 2, 3, 2, "b2", b1.ID)
	c1 := fileV(3, 1, 2, 3, "c", a1.ID)
	x := fileV(4, 1, 4, 4, "x", b1.ID, c1.ID)
	y := fileV(5, 1, 4, 5, "y", b1.ID, c1.ID)
	lone := fileV(6, 1, 1, 6, "lone")
	g := buildGraph(t, y, x, c1, b2, b1, a1, lone)

	descends := []struct {
		a, b VersionID
		want bool
	}{
		{b2.ID, a1.ID, true},
		{b2.ID, b2.ID, true},
		{a1.ID, b2.ID, false},
		{c1.ID, b1.ID, false},
		{x.ID, a1.ID, true},
		{x.ID, vid(9, 9), false},
	}
	for _, tt := range descends {
		if got := g.Descends(tt.a, tt.b); got != tt.want {
			t.Errorf("Descends(%v, %v): got %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}

	common := []struct {
		name string
		ids  []VersionID
		want VersionID
		ok   bool
	}{
		{"fork", []VersionID{b2.ID, c1.ID}, a1.ID, true},
		{"one is the other's ancestor", []VersionID{b2.ID, b1.ID}, b1.ID, true},
		{"criss-cross picks the WinnerOrder best", []VersionID{x.ID, y.ID}, c1.ID, true},
		{"three", []VersionID{b2.ID, c1.ID, x.ID}, a1.ID, true},
		{"unrelated", []VersionID{lone.ID, b1.ID}, VersionID{}, false},
		{"unknown", []VersionID{vid(9, 9), b1.ID}, VersionID{}, false},
		{"none", nil, VersionID{}, false},
	}
	for _, tt := range common {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := g.CommonAncestor(tt.ids...)
			if ok != tt.ok || got.ID != tt.want {
				t.Errorf("CommonAncestor: got %v, %v; want %v, %v", got.ID, ok, tt.want, tt.ok)
			}
		})
	}
}
