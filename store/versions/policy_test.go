package versions

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

func testCID(t testing.TB, s string) cid.Cid {
	t.Helper()
	h, err := multihash.Sum([]byte(s), multihash.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	return cid.NewCidV1(cid.Raw, h)
}

func entryOf(t *testing.T, id, path string, kept time.Time, current bool, chunks ...string) Entry {
	e := Entry{ID: []byte(id), Path: path, KeptAt: kept, Current: current}
	for _, c := range chunks {
		e.Chunks = append(e.Chunks, ChunkRef{CID: testCID(t, c), Size: 100})
	}
	return e
}

func TestPlanKeepsEverythingWithinBudgetAndWindow(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	es := []Entry{
		entryOf(t, "a1", "a", now.Add(-48*time.Hour), false, "x", "y"),
		entryOf(t, "a2", "a", now.Add(-time.Hour), false, "x", "z"),
		entryOf(t, "a3", "a", now, true, "x", "w"),
	}
	drop, bytes := Plan(es, now, Policy{Budget: 1 << 20})
	if len(drop) != 0 {
		t.Fatalf("dropped %v", drop)
	}
	if bytes != 400 { // x counted once
		t.Fatalf("bytes = %d, want 400 (shared chunks once)", bytes)
	}
}

func TestPlanThinsOldVersionsToOnePerDay(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	old := now.Add(-40 * 24 * time.Hour).Truncate(24 * time.Hour)
	var es []Entry
	for i := range 6 { // three on each of two days
		day := old.Add(time.Duration(i/3) * 24 * time.Hour)
		es = append(es, entryOf(t, fmt.Sprint("v", i), "a", day.Add(time.Duration(i%3)*time.Hour), false, fmt.Sprint("c", i)))
	}
	es = append(es, entryOf(t, "cur", "a", old, true, "cur"))             // current: never thinned
	es = append(es, entryOf(t, "b", "b", old.Add(time.Hour), false, "b")) // another path: its own day
	drop, _ := Plan(es, now, Policy{Budget: 1 << 20})
	if want := []int{0, 1, 3, 4}; !slices.Equal(drop, want) {
		t.Fatalf("dropped %v, want %v (the newest of each day kept)", drop, want)
	}
}

func TestPlanBudgetDropsOldestFirst(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	es := []Entry{
		entryOf(t, "new", "a", now, true, "n1", "shared"),
		entryOf(t, "old", "b", now.Add(-3*time.Hour), true, "o1", "o2"),
		entryOf(t, "mid", "a", now.Add(-2*time.Hour), false, "m1", "shared"),
	}
	drop, bytes := Plan(es, now, Policy{Budget: 300})
	if !slices.Equal(drop, []int{1}) || bytes != 300 {
		t.Fatalf("dropped %v with %d bytes left, want [1] and 300", drop, bytes)
	}
	drop, bytes = Plan(es, now, Policy{Budget: 250})
	if !slices.Equal(drop, []int{1, 2}) || bytes != 200 {
		t.Fatalf("dropped %v with %d bytes left, want [1 2] and 200 (a shared chunk frees nothing until its last user goes)", drop, bytes)
	}
	drop, _ = Plan(es, now, Policy{Budget: 0})
	if len(drop) != 3 {
		t.Fatalf("budget 0 kept %d versions", 3-len(drop))
	}
}
