package watchfallback

import (
	"testing"
	"time"
)

// Fallback rescans run only while something is unwatched, cover just the
// unwatched subtrees (the whole folder when the watcher is dead or the
// root is unwatched), and never more often than Every or
// CostFactor times the last one's duration.
func TestFallbackPaths(t *testing.T) {
	f := &Fallback{}
	t0 := time.Unix(1_800_000_000, 0)
	if _, ok := f.Due(t0); ok {
		t.Fatal("a fallback rescan with everything watched")
	}
	f.roots = []string{"a", "b/c"}
	if p, ok := f.Due(t0); !ok || len(p) != 2 || p[0] != "a" || p[1] != "b/c" {
		t.Fatalf("got %v %v, want the two unwatched roots", p, ok)
	}
	if _, ok := f.Due(t0.Add(Every - time.Millisecond)); ok {
		t.Fatal("a fallback rescan before Every")
	}
	if _, ok := f.Due(t0.Add(Every)); !ok {
		t.Fatal("no fallback rescan after Every")
	}
	f.took = 2 * time.Second // a slow one: 40 s between them
	if _, ok := f.Due(t0.Add(Every + 39*time.Second)); ok {
		t.Fatal("a fallback rescan before 20 times the last one's duration")
	}
	if _, ok := f.Due(t0.Add(Every + 40*time.Second)); !ok {
		t.Fatal("no fallback rescan after 20 times the last one's duration")
	}
	f.took, f.dead = 0, true
	if p, ok := f.Due(t0.Add(time.Hour)); !ok || p != nil {
		t.Fatalf("a dead watcher: got %v %v, want the whole folder (nil)", p, ok)
	}
	if un, whole, _ := f.State(); !whole || un != 2 {
		t.Fatalf("state: %d unwatched, whole %v", un, whole)
	}
	f.SetDead(nil)
	if _, ok := f.Due(t0.Add(2 * time.Hour)); ok {
		t.Fatal("a fallback rescan once the watcher runs again")
	}
}
