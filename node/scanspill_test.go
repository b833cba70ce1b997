package node

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The first whole-folder scan of a folder records new files while it
// walks, in batches of spillEvery, and every one of them ends up recorded
// exactly once; once anything is indexed, a scan records them at the end,
// where a move is judged whole.
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

	// With anything indexed, new files wait for the walk's end: a move
	// of many files is judged whole by the mass-delete guard (as a move,
	// not a mass deletion).
	if err := os.Mkdir(filepath.Join(folderPath, "moved"), 0o755); err != nil {
		t.Fatal(err)
	}
	for d := range 10 {
		if err := os.Rename(filepath.Join(folderPath, fmt.Sprintf("d%d", d)), filepath.Join(folderPath, "moved", fmt.Sprintf("d%d", d))); err != nil {
			t.Fatal(err)
		}
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
	if res.Spilled != 0 {
		t.Fatalf("a scan of an indexed folder spilled %d new files", res.Spilled)
	}
	if held := n.API().Deletions(); len(held) != 0 {
		t.Fatalf("a move of every file is held as a mass deletion: %+v", held)
	}
	v.mu.Lock()
	moved := len(v.view.Graph.Heads("moved/d0/n0.md"))
	v.mu.Unlock()
	if moved != 1 {
		t.Fatalf("moved/d0/n0.md has %d heads, want the move recorded", moved)
	}
}
