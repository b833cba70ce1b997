package engine

import (
	"testing"

	"github.com/weftsync/weft/protocol"
)

// The bytes a pass writes: per path, the largest file head the folder
// does not hold; nothing for a held head, a deletion or a path not given.
func TestBytesToWrite(t *testing.T) {
	sized := func(v protocol.Version, n uint64) protocol.Version { v.Size = n; return v }
	base := sized(file(id(devA, 1), "a", 1, 1), 10)
	mine := sized(file(id(devA, 2), "a", 2, 2, base.ID), 100)
	theirs := sized(file(id(devB, 1), "a", 3, 2, base.ID), 300) // concurrent with mine
	held := sized(file(id(devB, 2), "b", 4, 1), 5000)           // already on disk
	gone := del(id(devB, 3), "c", 1)
	other := sized(file(id(devB, 4), "d", 5, 1), 7) // not in the pass
	g := graph(t, base, mine, theirs, held, gone, other)
	disk := map[string]protocol.VersionID{"a": mine.ID, "b": held.ID}
	holds := func(p string) (protocol.VersionID, bool) { v, ok := disk[p]; return v, ok }
	if got := BytesToWrite(g, []string{"a", "b", "c"}, holds); got != 300 {
		t.Fatalf("BytesToWrite = %d, want 300 (a's other head; b held; c a deletion)", got)
	}
	if got := BytesToWrite(g, nil, holds); got != 0 {
		t.Fatalf("no paths: %d", got)
	}
}
