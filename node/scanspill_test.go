package node

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A whole-folder scan records new files while it walks, in batches of
// spillEvery, and every one of them ends up recorded exactly once; with a
// conflict copy in the index it records them at the end (a new file may
// be the copy moved back, paired with the copy's deletion).
func TestFirstScanRecordsNewFilesInBatches(t *testing.T) {
	n, folderPath := testNodeWith(t, Config{NoWatcher: true, NoScrub: true})
	v := n.vaultsNow()[0]
	const files = 2*spillEvery + 5
	for i := range files {
		dir := filepath.Join(folderPath, fmt.Sprintf("d%d", i%10))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("n%d.md", i)), fmt.Appendf(nil, "note %d\n", i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := v.scan(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Spilled != 2*spillEvery || res.NumChanges() != files+10 {
		t.Fatalf("spilled %d of %d changes, want %d of %d", res.Spilled, res.NumChanges(), 2*spillEvery, files+10)
	}
	v.mu.Lock()
	recorded, heads := v.index.Len(), 0
	for i := range files {
		heads += len(v.view.Graph.Heads(fmt.Sprintf("d%d/n%d.md", i%10, i)))
	}
	v.mu.Unlock()
	if recorded != files+10 || heads != files {
		t.Fatalf("index holds %d paths and the graph %d file heads, want %d and %d", recorded, heads, files+10, files)
	}
	if res, err := v.scan(t.Context(), nil); err != nil || res.NumChanges() != 0 {
		t.Fatalf("a rescan found %d changes (%v), want none", res.NumChanges(), err)
	}

	// A conflict copy in the index: new files wait for the walk's end.
	copyName := "d0/n0.conflict-AAAAAAAA-20260101-000000-000000.md"
	if err := os.WriteFile(filepath.Join(folderPath, copyName), []byte("a copy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := v.scan(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	copies := v.index.NumConflictCopies()
	v.mu.Unlock()
	if copies != 1 {
		t.Fatalf("the index holds %d conflict copies, want 1 (is %s a copy's name?)", copies, copyName)
	}
	for i := range spillEvery + 1 {
		if err := os.WriteFile(filepath.Join(folderPath, fmt.Sprintf("e%d.md", i)), []byte("e"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err = v.scan(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Spilled != 0 || len(res.Changes) != spillEvery+1 {
		t.Fatalf("with a conflict copy indexed: spilled %d, returned %d, want 0 and %d", res.Spilled, len(res.Changes), spillEvery+1)
	}
}
