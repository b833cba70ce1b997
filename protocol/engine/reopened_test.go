package engine

import (
	"slices"
	"testing"

	"github.com/weftsync/weft/protocol"
)

// TestReopened: after a restart only the paths whose index does not
// record their one head, or whose one head is a deletion, stay dirty.
func TestReopened(t *testing.T) {
	w := newScriptWorld(3)
	versions := []protocol.Version{
		file(id(devA, 1), "applied", 1, 1),
		file(id(devA, 2), "older", 2, 2),
		file(id(devA, 3), "older", 3, 3, id(devA, 2)),
		file(id(devA, 4), "conflict", 4, 4),
		file(id(devB, 1), "conflict", 5, 4),
		file(id(devA, 5), "deleted", 6, 5),
		del(id(devA, 6), "deleted", 6, id(devA, 5)),
		file(id(devA, 7), "unindexed", 7, 7),
	}
	for _, v := range versions {
		if err := w.g.Add(v); err != nil {
			t.Fatalf("adding %v: %v", v.ID, err)
		}
		w.e.Step(Touched{Paths: []string{v.Path}})
	}
	for path, v := range map[string]protocol.Version{"applied": versions[0], "older": versions[1], "conflict": versions[3], "deleted": versions[5]} {
		w.index[path] = onDisk(v)
	}
	want := []string{"conflict", "deleted", "older", "unindexed"}
	// AtHead is Reopened's rule, path by path.
	var notAtHead []string
	for _, p := range w.e.DirtyPaths() {
		if !AtHead(w, p) {
			notAtHead = append(notAtHead, p)
		}
	}
	if !slices.Equal(notAtHead, want) {
		t.Errorf("paths not AtHead: %q, want %q", notAtHead, want)
	}
	w.e.Reopened(w)
	if got := w.e.DirtyPaths(); !slices.Equal(got, want) {
		t.Errorf("dirty after reopening: %q, want %q", got, want)
	}
}
