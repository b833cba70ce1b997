package simulation

import (
	"slices"
	"testing"
)

func TestTempFiles(t *testing.T) {
	h := func(b byte) Item { return Item{Hash: [32]byte{b}} }
	for _, tc := range []struct {
		name string
		tree map[string]Item
		want []string
	}{
		{"none", map[string]Item{"a.txt": h(1), "docs": {Dir: true}}, nil},
		{"nested", map[string]Item{"docs/.weft-tmp-12": h(1), ".weft-tmp-3": h(2), "docs/f.txt": h(3)}, []string{".weft-tmp-3", "docs/.weft-tmp-12"}},
		{"prefix only in a directory name", map[string]Item{".weft-tmp-dir": {Dir: true}, "x/.weft-tmpX": h(1)}, nil},
	} {
		if got := tempFiles(tc.tree); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCopyProblems(t *testing.T) {
	h := func(b byte) Item { return Item{Hash: [32]byte{b}} }
	for _, tc := range []struct {
		name string
		tree map[string]Item
		want []string
	}{
		{"one copy per loser", map[string]Item{
			"f.txt": h(1), "f.conflict-d1-20260101-000000-aa.txt": h(2), "f.conflict-d2-20260101-000000-bb.txt": h(3),
		}, nil},
		{"same content as the winner is fine", map[string]Item{
			"f.txt": h(1), "f.conflict-d1-20260101-000000-aa.txt": h(1),
		}, nil},
		{"one content, two copies", map[string]Item{
			"f.txt": h(1), "f.conflict-d1-x.txt": h(2), "f.conflict-d2-y.txt": h(2),
		}, []string{"one content in 2 conflict copies: f.conflict-d1-x.txt, f.conflict-d2-y.txt"}},
		{"one content lost at two paths", map[string]Item{
			"f0.conflict-d1-x.txt": h(2), "f1.conflict-d1-x.txt": h(2), "docs/f0.conflict-d1-x.txt": h(2),
		}, nil},
		{"copy of a copy", map[string]Item{
			"docs/f.conflict-d1-x.conflict-d2-y.txt": h(4),
		}, []string{"copy of a conflict copy: docs/f.conflict-d1-x.conflict-d2-y.txt"}},
	} {
		if got := copyProblems(tc.tree); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
