package protocol

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// recordResolution returns the versions node/ records for decision d when
// device author carries it out as its entry seq: a version at the path with
// the winner's content that supersedes every head, and a version per
// conflict copy not already in the graph. Identical and single outcomes
// record nothing.
func recordResolution(g *Graph, author byte, seq uint64, d Decision) []Version {
	if len(d.Superseded) <= 1 || d.Outcome == OutcomeIdentical {
		return nil
	}
	var clock uint64
	for _, p := range g.Paths() {
		for _, h := range g.Heads(p) {
			clock = max(clock, h.Clock)
		}
	}
	clock++
	res := d.Winner
	res.ID, res.Clock, res.Supersedes = VersionID{Author: dev(author), Seq: seq}, clock, d.Superseded
	out := []Version{res}
	for i, c := range d.Copies {
		if c.Exists {
			continue
		}
		cp := c.Version
		cp.ID, cp.Path, cp.Clock, cp.Supersedes = VersionID{Author: dev(author), Seq: seq, Index: uint32(i + 1)}, c.Path, clock, nil
		for _, h := range g.Heads(c.Path) {
			cp.Supersedes = append(cp.Supersedes, h.ID)
		}
		out = append(out, cp)
	}
	return out
}

func graphOf(t *testing.T, vs ...Version) *Graph {
	t.Helper()
	g := NewGraph()
	for _, v := range vs {
		if err := g.Add(v); err != nil {
			t.Fatalf("Add %v: %v", v.ID, err)
		}
	}
	return g
}

// liveContents maps each path with a live head to the contents of its live
// heads.
func liveContents(g *Graph) map[string][][32]byte {
	out := map[string][][32]byte{}
	for _, p := range g.Paths() {
		for _, h := range g.Heads(p) {
			if h.Kind != KindDeletion && !slices.Contains(out[p], h.ContentHash) {
				out[p] = append(out[p], h.ContentHash)
			}
		}
	}
	return out
}

// TestConcurrentResolutionsCopyEachLoserOnce: three binary edits A < B < X
// (by mtime) of notes.md. Devices 2 and 3 resolve {A, B}, device 4 resolves
// {A, B, X}, all at once; then every device sees everything and resolves
// again until nothing more is recorded. The path must end with X, and A and
// B must each sit at exactly one conflict copy, named after their authors,
// with no copy of a copy.
func TestConcurrentResolutionsCopyEachLoserOnce(t *testing.T) {
	base := binary(fileV(1, 1, 1, 0, "\x00base"))
	a := binary(fileV(2, 1, 2, 10, "\x00A", base.ID))
	b := binary(fileV(3, 1, 2, 20, "\x00B", base.ID))
	x := binary(fileV(4, 1, 2, 30, "\x00X", base.ID))
	all := []Version{base, a, b, x}

	seq := map[byte]uint64{2: 1, 3: 1, 4: 1}
	resolveAs := func(author byte, vs []Version) []Version {
		g := graphOf(t, vs...)
		d, err := g.Resolve("notes.md", nil)
		if err != nil {
			t.Fatalf("device %d: Resolve: %v", author, err)
		}
		seq[author]++
		return recordResolution(g, author, seq[author], d)
	}
	// Round 1: different views, at once.
	var written []Version
	written = append(written, resolveAs(2, []Version{base, a, b})...)
	written = append(written, resolveAs(3, []Version{base, a, b})...)
	written = append(written, resolveAs(4, all)...)
	all = append(all, written...)
	// Later rounds: every device sees everything, and all resolve at once.
	for round := 2; ; round++ {
		if round > 5 {
			t.Fatal("resolutions did not settle within 5 rounds")
		}
		var more []Version
		for _, author := range []byte{2, 3, 4} {
			more = append(more, resolveAs(author, all)...)
		}
		for _, v := range more {
			if v.Path != "notes.md" {
				t.Errorf("round %d: device %s recorded another copy %s", round, v.ID, v.Path)
			}
		}
		if len(more) == 0 {
			break
		}
		all = append(all, more...)
	}

	g := graphOf(t, all...)
	d, err := g.Resolve("notes.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Winner.ContentHash != x.ContentHash || len(d.Copies) != 0 {
		t.Errorf("final decision: got winner content %x with %d copies, want X and none", d.Winner.ContentHash[:3], len(d.Copies))
	}
	live := liveContents(g)
	want := map[string][][32]byte{
		"notes.md":                     {x.ContentHash},
		ConflictName("notes.md", a, 1): {a.ContentHash},
		ConflictName("notes.md", b, 1): {b.ContentHash},
	}
	if len(live) != len(want) {
		t.Errorf("got live paths %v, want %d paths", sortedKeys(live), len(want))
	}
	for p, w := range want {
		if !slices.Equal(live[p], w) {
			t.Errorf("%s: got %d live contents, want exactly the expected one", p, len(live[p]))
		}
	}
	for p := range live {
		if strings.Count(p, ".conflict-") > 1 {
			t.Errorf("copy of a copy: %s", p)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestSameLoserSameName: a losing content gets one name whatever set of
// heads a device sees and whoever recorded it again, and a name already
// holding it is reused.
func TestSameLoserSameName(t *testing.T) {
	base := binary(fileV(1, 1, 1, 0, "\x00base"))
	a := binary(fileV(2, 1, 2, 10, "\x00A", base.ID))
	b := binary(fileV(3, 1, 2, 20, "\x00B", base.ID))
	x := binary(fileV(4, 1, 2, 30, "\x00X", base.ID))
	// Device 5 resolved {A, B} and kept B; its version restates B.
	r5 := b
	r5.ID, r5.Clock, r5.Supersedes = vid(5, 1), 3, []VersionID{a.ID, b.ID}
	nameA, nameB := ConflictName("notes.md", a, 1), ConflictName("notes.md", b, 1)
	// Device 6 copied B already, at the name B always gets.
	copyB := b
	copyB.ID, copyB.Path, copyB.Clock, copyB.Supersedes = vid(6, 1), nameB, 3, nil

	tests := []struct {
		name       string
		graph      []Version
		heads      []Version
		wantWinner VersionID
		want       map[string]bool // copy name -> Exists
	}{
		{"A and B", []Version{base, a, b}, []Version{a, b}, b.ID, map[string]bool{nameA: false}},
		{"B and A", []Version{base, b, a}, []Version{b, a}, b.ID, map[string]bool{nameA: false}},
		{"A and X", []Version{base, a, x}, []Version{a, x}, x.ID, map[string]bool{nameA: false}},
		{"all three", []Version{base, a, b, x}, []Version{x, a, b}, x.ID, map[string]bool{nameA: false, nameB: false}},
		{"B restated by another device: named after B's author", []Version{base, a, b, x, r5}, []Version{x, r5}, x.ID, map[string]bool{nameB: false}},
		{"B's copy exists: reused", []Version{base, a, b, x, copyB}, []Version{a, b, x}, x.ID, map[string]bool{nameA: false, nameB: true}},
		{"B restated and its copy exists", []Version{base, a, b, x, r5, copyB}, []Version{r5, x}, x.ID, map[string]bool{nameB: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := graphOf(t, tt.graph...)
			d, err := Resolve(tt.heads, g, g.NameUse)
			if err != nil {
				t.Fatal(err)
			}
			if d.Winner.ID != tt.wantWinner {
				t.Errorf("winner: got %v, want %v", d.Winner.ID, tt.wantWinner)
			}
			got := map[string]bool{}
			for _, c := range d.Copies {
				got[c.Path] = c.Exists
			}
			if !mapsEqual(got, tt.want) {
				t.Errorf("copies: got %v, want %v", got, tt.want)
			}
		})
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestStaleRestatementDropped: devices 2 and 3 both resolved {A, B} to B;
// device 2's user then edited (or deleted) the file before device 3's
// resolution arrived. Device 3's restatement of B brings nothing device 2
// had not seen: it is dropped without a copy, and the edit or deletion
// stands.
func TestStaleRestatementDropped(t *testing.T) {
	base := binary(fileV(1, 1, 1, 0, "\x00base"))
	a := binary(fileV(2, 1, 2, 10, "\x00A", base.ID))
	b := binary(fileV(3, 1, 2, 20, "\x00B", base.ID))
	restate := func(author byte) Version {
		r := b
		r.ID, r.Clock, r.Supersedes = vid(author, 2), 3, []VersionID{a.ID, b.ID}
		return r
	}
	r2, r3 := restate(2), restate(3)
	edit := binary(fileV(2, 3, 4, 5, "\x00edit", r2.ID)) // an older mtime than B: only rule 2 keeps it
	del := withKind(fileV(2, 3, 4, 5, "", r2.ID), KindDeletion)
	tests := []struct {
		name        string
		later       Version
		wantOutcome Outcome
	}{
		{"edit", edit, OutcomeOutdated},
		{"deletion", del, OutcomeOutdated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := graphOf(t, base, a, b, r2, r3, tt.later)
			d, err := g.Resolve("notes.md", nil)
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tt.wantOutcome || d.Winner.ID != tt.later.ID || len(d.Copies) != 0 {
				t.Errorf("got %v winner %v with %d copies, want %v winner %v, no copy", d.Outcome, d.Winner.ID, len(d.Copies), tt.wantOutcome, tt.later.ID)
			}
			if len(d.Dropped) != 1 || d.Dropped[0].ID != r3.ID {
				t.Errorf("dropped: got %v, want [%v]", ids(d.Dropped), r3.ID)
			}
		})
	}
	// A concurrent edit by a device that never saw B does not make the two
	// restatements of B outdated: B still needs its copy.
	n := binary(fileV(5, 1, 2, 40, "\x00N", base.ID))
	g0 := graphOf(t, base, a, b, r2, r3, n)
	if d, err := g0.Resolve("notes.md", nil); err != nil || d.Outcome != OutcomeConflict || d.Winner.ID != n.ID ||
		len(d.Copies) != 1 || d.Copies[0].Version.ContentHash != b.ContentHash || d.Copies[0].Path != ConflictName("notes.md", b, 1) {
		t.Errorf("restatements vs an unrelated edit: got %v winner %v copies %v (%v); want conflict, N wins, B copied under B's name", d.Outcome, d.Winner.ID, d.Copies, err)
	}
	// Without the later version, the two restatements are one content.
	g := graphOf(t, base, a, b, r2, r3)
	if d, err := g.Resolve("notes.md", nil); err != nil || d.Outcome != OutcomeIdentical || d.Winner.ContentHash != b.ContentHash {
		t.Errorf("two restatements: got %v, %v; want identical B", d.Outcome, err)
	}
}

func TestGraphNameUse(t *testing.T) {
	x := binary(fileV(2, 1, 2, 0, "\x00x"))
	y := binary(fileV(3, 1, 2, 0, "\x00y"))
	at := func(v Version, p string, id VersionID) Version { v.Path, v.ID = p, id; return v }
	gone := withKind(at(x, "gone", vid(4, 1)), KindDeletion)
	g := graphOf(t, at(x, "x-only", vid(2, 2)), at(x, "both", vid(2, 3)), at(y, "both", vid(3, 3)), gone,
		at(x, "x-twice", vid(2, 4)), at(x, "x-twice", vid(3, 4)))
	tests := []struct {
		name string
		want NameUse
	}{
		{"nothing", NameFree},
		{"gone", NameFree},
		{"x-only", NameHolds},
		{"x-twice", NameHolds},
		{"both", NameTaken},
	}
	for _, tt := range tests {
		if got := g.NameUse(tt.name, x); got != tt.want {
			t.Errorf("NameUse(%q, x): got %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := g.NameUse("x-only", y); got != NameTaken {
		t.Errorf("NameUse(x-only, y): got %v, want taken", got)
	}
}

// TestConcurrentResolutionsConvergeProperty: random concurrent edits of
// one path (mtimes drawn from a small pool, so ties are common), each
// device resolving first from a random subset of the edits, then from all
// edits and a random subset of the first resolutions, then from
// everything until nothing more is recorded. Every losing content must end
// in exactly one conflict copy, no copy name may hold two contents, and no
// copy of a copy may appear.
func TestConcurrentResolutionsConvergeProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := binary(fileV(1, 1, 1, 0, "\x00base"))
		n := rapid.IntRange(2, 4).Draw(t, "edits")
		var edits []Version
		for i := range n {
			e := binary(fileV(byte(2+i), 1, 2, int64(rapid.IntRange(0, 2).Draw(t, "mtime")), fmt.Sprintf("\x00edit %d", i), base.ID))
			edits = append(edits, e)
		}
		seq := map[byte]uint64{}
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
			return recordResolution(g, author, 1+seq[author], d)
		}
		subset := func(label string, vs []Version) []Version {
			var out []Version
			for _, v := range vs {
				if rapid.Bool().Draw(t, label) {
					out = append(out, v)
				}
			}
			return out
		}
		// Round 1: each editor sees its own edit and some others.
		var round1 [][]Version
		for i, e := range edits {
			seen := append([]Version{base, e}, subset("seen edit", append(slices.Clone(edits[:i]), edits[i+1:]...))...)
			round1 = append(round1, resolveAs(e.ID.Author[0], seen))
		}
		all := append([]Version{base}, edits...)
		// Round 2: every edit, its own first resolution and some others'.
		var round2 []Version
		for i, e := range edits {
			seen := slices.Clone(all)
			for j, r := range round1 {
				if i == j || rapid.Bool().Draw(t, "seen resolution") {
					seen = append(seen, r...)
				}
			}
			round2 = append(round2, resolveAs(e.ID.Author[0], seen)...)
		}
		for _, r := range round1 {
			all = append(all, r...)
		}
		all = append(all, round2...)
		// Then everything, all devices at once, until quiet.
		for round := 3; ; round++ {
			if round > 8 {
				t.Fatalf("resolutions did not settle")
			}
			var more []Version
			for _, e := range edits {
				more = append(more, resolveAs(e.ID.Author[0], all)...)
			}
			if len(more) == 0 {
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
		if len(d.Copies) != 0 {
			t.Fatalf("settled path still asks for %d copies", len(d.Copies))
		}
		at := map[[32]byte][]string{}
		for p, cs := range liveContents(g) {
			if p != "notes.md" && len(cs) != 1 {
				t.Fatalf("copy %s holds %d contents", p, len(cs))
			}
			if strings.Count(p, ".conflict-") > 1 {
				t.Fatalf("copy of a copy: %s", p)
			}
			if p != "notes.md" {
				at[cs[0]] = append(at[cs[0]], p)
			}
		}
		for _, e := range edits {
			want := 1
			if e.ContentHash == d.Winner.ContentHash {
				want = 0
			}
			if len(at[e.ContentHash]) != want {
				t.Fatalf("edit by %s: in copies %v, want %d copy", e.ID.Author.Short(), at[e.ContentHash], want)
			}
		}
	})
}
