package protocol

import (
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// contents maps content hashes to the text of test versions, for running
// merge plans. The zero hash (directories, deletions) maps to "".
type contents map[[32]byte]string

// carryOut does what node/ does with a decision: run the merge if there is
// one, and report the final text at the path and the conflict copies.
func carryOut(t *testing.T, d Decision, c contents) (text string, copies map[string]string) {
	t.Helper()
	if d.Merge != nil {
		sides := make([][]byte, len(d.Merge.Sides))
		for i, s := range d.Merge.Sides {
			sides[i] = []byte(c[s.ContentHash])
		}
		merged, clean, err := MergeAll([]byte(c[d.Merge.Base.ContentHash]), sides)
		if err != nil {
			t.Fatalf("MergeAll: %v", err)
		}
		if clean {
			return string(merged), nil
		}
	}
	copies = map[string]string{}
	for _, cp := range d.Copies {
		copies[cp.Path] = c[cp.Version.ContentHash]
	}
	if len(copies) == 0 {
		copies = nil
	}
	return c[d.Winner.ContentHash], copies
}

// hashHex is the content-hash part of a conflict name for content.
func hashHex(content string) string {
	h := hashOf(content)
	return hex.EncodeToString(h[:3])
}

func TestResolve(t *testing.T) {
	const base = "one\ntwo\nthree\nfour\nfive\n"
	a1 := fileV(1, 1, 1, 0, base)
	short2, short3 := dev(2).Short(), dev(3).Short()
	// Concurrent edits of a1 by devices 2 and 3; device 3's mtime is later.
	edit := func(author byte, sec int64, text string) Version { return fileV(author, 1, 2, sec, text, a1.ID) }
	del := func(author byte, sec int64) Version { return withKind(edit(author, sec, ""), KindDeletion) }
	c := contents{a1.ContentHash: base}
	text := func(v Version, s string) Version { c[v.ContentHash] = s; return v }

	firstLine := text(edit(2, 10, "ONE\ntwo\nthree\nfour\nfive\n"), "ONE\ntwo\nthree\nfour\nfive\n")
	lastLine := text(edit(3, 20, "one\ntwo\nthree\nfour\nFIVE\n"), "one\ntwo\nthree\nfour\nFIVE\n")
	sameLine2 := text(edit(2, 10, "one\ntwo\nTHREE by 2\nfour\nfive\n"), "one\ntwo\nTHREE by 2\nfour\nfive\n")
	sameLine3 := text(edit(3, 20, "one\ntwo\nTHREE by 3\nfour\nfive\n"), "one\ntwo\nTHREE by 3\nfour\nfive\n")
	middle4 := text(fileV(4, 1, 2, 30, "one\ntwo\nthree\n3.5\nfour\nfive\n", a1.ID), "one\ntwo\nthree\n3.5\nfour\nfive\n")
	same2 := text(edit(2, 10, "same\n"), "same\n")
	same3 := text(edit(3, 20, "same\n"), "same\n")
	same3mode := func() Version { v := same3; v.Mode = 0o755; return v }()
	bin2 := text(binary(edit(2, 10, "\x00bin2")), "\x00bin2")
	bin3 := text(binary(edit(3, 20, "\x00bin3")), "\x00bin3")
	bin4 := text(binary(fileV(4, 1, 2, 20, "\x00bin4", a1.ID)), "\x00bin4")
	new2 := text(fileV(2, 1, 2, 10, "new by 2\n"), "new by 2\n") // no common ancestor
	new3 := text(fileV(3, 1, 2, 20, "new by 3\n"), "new by 3\n")
	dir2 := withKind(edit(2, 10, ""), KindDir)
	dir3 := func() Version { v := withKind(edit(3, 20, ""), KindDir); v.Mode = 0o700; return v }()
	link3 := text(withKind(edit(3, 20, "target"), KindSymlink), "target")

	copyName := func(short, ts, content string) string {
		return "notes.conflict-" + short + "-" + ts + "-" + hashHex(content) + ".md"
	}
	ts2, ts3 := "20261130-054707", "20261130-054717" // t0+10s, t0+20s

	tests := []struct {
		name        string
		heads       []Version
		taken       []string
		wantOutcome Outcome
		wantWinner  VersionID
		wantDropped []VersionID
		wantSides   []VersionID // merge plan sides, if any
		wantText    string
		wantCopies  map[string]string
	}{
		{"single head", []Version{firstLine}, nil, OutcomeSingle, firstLine.ID, nil, nil, firstLine.Path + "", nil},
		{"identical content", []Version{same2, same3}, nil, OutcomeIdentical, same3.ID, []VersionID{same2.ID}, nil, "same\n", nil},
		{"identical content, modes differ: later wins, no copy", []Version{same3mode, same2}, nil, OutcomeIdentical, same3.ID, []VersionID{same2.ID}, nil, "same\n", nil},
		{"edit beats later deletion", []Version{firstLine, del(3, 99)}, nil, OutcomeEditBeatsDeletion, firstLine.ID, []VersionID{vid(3, 1)}, nil, "ONE\ntwo\nthree\nfour\nfive\n", nil},
		{"edit beats earlier deletion", []Version{del(2, 1), lastLine}, nil, OutcomeEditBeatsDeletion, lastLine.ID, []VersionID{vid(2, 1)}, nil, "one\ntwo\nthree\nfour\nFIVE\n", nil},
		{"all deletions", []Version{del(2, 1), del(3, 2)}, nil, OutcomeIdentical, vid(3, 1), []VersionID{vid(2, 1)}, nil, "", nil},
		{"clean merge", []Version{firstLine, lastLine}, nil, OutcomeMerge, lastLine.ID, nil, []VersionID{lastLine.ID, firstLine.ID}, "ONE\ntwo\nthree\nfour\nFIVE\n", nil},
		{"same line: later mtime wins, other is a copy", []Version{sameLine2, sameLine3}, nil, OutcomeMerge, sameLine3.ID, nil, []VersionID{sameLine3.ID, sameLine2.ID},
			"one\ntwo\nTHREE by 3\nfour\nfive\n", map[string]string{copyName(short2, ts2, "one\ntwo\nTHREE by 2\nfour\nfive\n"): "one\ntwo\nTHREE by 2\nfour\nfive\n"}},
		{"same line, copy name taken", []Version{sameLine2, sameLine3}, []string{copyName(short2, ts2, "one\ntwo\nTHREE by 2\nfour\nfive\n")}, OutcomeMerge, sameLine3.ID, nil, []VersionID{sameLine3.ID, sameLine2.ID},
			"one\ntwo\nTHREE by 3\nfour\nfive\n", map[string]string{strings.TrimSuffix(copyName(short2, ts2, "one\ntwo\nTHREE by 2\nfour\nfive\n"), ".md") + "-2.md": "one\ntwo\nTHREE by 2\nfour\nfive\n"}},
		{"three heads merge pairwise", []Version{middle4, firstLine, lastLine}, nil, OutcomeMerge, middle4.ID, nil, []VersionID{middle4.ID, lastLine.ID, firstLine.ID}, "ONE\ntwo\nthree\n3.5\nfour\nFIVE\n", nil},
		{"binary: conflict copy", []Version{bin3, bin2}, nil, OutcomeConflict, bin3.ID, nil, nil, "\x00bin3", map[string]string{copyName(short2, ts2, "\x00bin2"): "\x00bin2"}},
		{"three binary heads, two copies, same second", []Version{bin2, bin3, bin4}, nil, OutcomeConflict, bin4.ID, nil, nil, "\x00bin4",
			map[string]string{copyName(short3, ts3, "\x00bin3"): "\x00bin3", copyName(short2, ts2, "\x00bin2"): "\x00bin2"}},
		{"text without a common ancestor", []Version{new2, new3}, nil, OutcomeConflict, new3.ID, nil, nil, "new by 3\n", map[string]string{copyName(short2, ts2, "new by 2\n"): "new by 2\n"}},
		{"identical plus conflict plus deletion", []Version{bin2, bin3, del(4, 50), text(binary(fileV(5, 1, 2, 5, "\x00bin2", a1.ID)), "\x00bin2")}, nil,
			OutcomeConflict, bin3.ID, []VersionID{vid(4, 1), vid(5, 1)}, nil, "\x00bin3", map[string]string{copyName(short2, ts2, "\x00bin2"): "\x00bin2"}},
		{"directory beats a later file", []Version{dir2, lastLine}, nil, OutcomeKindClash, dir2.ID, nil, nil, "",
			map[string]string{copyName(short3, ts3, "one\ntwo\nthree\nfour\nFIVE\n"): "one\ntwo\nthree\nfour\nFIVE\n"}},
		{"directories are alike", []Version{dir2, dir3}, nil, OutcomeIdentical, dir3.ID, []VersionID{dir2.ID}, nil, "", nil},
		{"directory beats deletion", []Version{dir2, del(3, 50)}, nil, OutcomeEditBeatsDeletion, dir2.ID, []VersionID{vid(3, 1)}, nil, "", nil},
		{"symlink vs file: winner order", []Version{firstLine, link3}, nil, OutcomeKindClash, link3.ID, nil, nil, "target",
			map[string]string{copyName(short2, ts2, "ONE\ntwo\nthree\nfour\nfive\n"): "ONE\ntwo\nthree\nfour\nfive\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := buildGraph(t, append([]Version{a1}, tt.heads...)...)
			taken := func(p string, _ Version) NameUse {
				if slices.Contains(tt.taken, p) {
					return NameTaken
				}
				return NameFree
			}
			d, err := Resolve(tt.heads, g, taken)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if d.Outcome != tt.wantOutcome {
				t.Errorf("Outcome: got %v, want %v", d.Outcome, tt.wantOutcome)
			}
			if d.Winner.ID != tt.wantWinner {
				t.Errorf("Winner: got %v, want %v", d.Winner.ID, tt.wantWinner)
			}
			if diff := cmp.Diff(tt.wantDropped, ids(d.Dropped), cmp.Comparer(func(a, b []VersionID) bool { return len(a) == 0 && len(b) == 0 || cmp.Equal(a, b) })); diff != "" {
				t.Errorf("Dropped (-want +got):\n%s", diff)
			}
			var sides []VersionID
			if d.Merge != nil {
				sides = ids(d.Merge.Sides)
				if d.Merge.Base.ID != a1.ID {
					t.Errorf("merge base: got %v, want %v", d.Merge.Base.ID, a1.ID)
				}
			}
			if diff := cmp.Diff(tt.wantSides, sides); diff != "" {
				t.Errorf("merge sides (-want +got):\n%s", diff)
			}
			if len(d.Superseded) != len(tt.heads) {
				t.Errorf("Superseded: got %d IDs, want %d", len(d.Superseded), len(tt.heads))
			}
			if tt.name == "single head" {
				return
			}
			gotText, gotCopies := carryOut(t, d, c)
			if gotText != tt.wantText {
				t.Errorf("text at the path: got %q, want %q", gotText, tt.wantText)
			}
			if diff := cmp.Diff(tt.wantCopies, gotCopies); diff != "" {
				t.Errorf("conflict copies (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	a1 := fileV(1, 1, 1, 0, "a")
	b1 := fileV(2, 1, 2, 0, "b", a1.ID)
	other := fileV(3, 1, 2, 0, "c")
	other.Path = "other.md"
	changed := b1
	changed.Size++
	g := buildGraph(t, a1, b1)
	tests := []struct {
		name  string
		heads []Version
		want  error
	}{
		{"no heads", nil, ErrNoHeads},
		{"mixed paths", []Version{a1, other}, ErrMixedPaths},
		{"not heads", []Version{a1, b1}, ErrNotHead},
		{"duplicate ID", []Version{b1, changed}, ErrDuplicateVersion},
		{"invalid", []Version{{ID: vid(1, 1), Path: "x"}}, ErrInvalidVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Resolve(tt.heads, g, nil); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	// The same head twice is one head.
	if d, err := Resolve([]Version{b1, b1}, g, nil); err != nil || d.Outcome != OutcomeSingle {
		t.Errorf("same head twice: got %v, %v; want single", d.Outcome, err)
	}
}

func TestResolveNilAncestryPlansNoMerge(t *testing.T) {
	a := fileV(2, 1, 2, 10, "x\n", vid(1, 1))
	b := fileV(3, 1, 2, 20, "y\n", vid(1, 1))
	d, err := Resolve([]Version{a, b}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != OutcomeConflict || d.Merge != nil || d.Winner.ID != b.ID || len(d.Copies) != 1 {
		t.Errorf("got %v winner %v, %d copies; want conflict, winner %v, 1 copy", d.Outcome, d.Winner.ID, len(d.Copies), b.ID)
	}
}
