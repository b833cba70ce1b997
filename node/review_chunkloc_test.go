package node

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
)

// chunkLoc keeps one location per CID. Two files with the same content
// (a copy of a document) share their chunks; the location points at the
// one indexed last. When that one is edited, setIndexLocked deletes the
// CID's location although the other file still holds the chunk, and
// nothing re-adds it until the agent restarts: this device can no longer
// serve a.bin's chunks to peers (nor read them locally for a rename),
// and a peer that needs them from this device stays stuck.
func TestReviewChunkLocationLostWhenDuplicateChanges(t *testing.T) {
	n, folderPath := testNode(t)
	v := n.vaultsNow()[0]
	ctx := context.Background()
	content := make([]byte, 64<<10)
	if _, err := rand.Read(content); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.bin", "b.bin"} {
		if err := os.WriteFile(filepath.Join(folderPath, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := v.scan(ctx, nil); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	refs := v.index.Rec("a.bin").Chunks
	v.mu.Unlock()
	if len(refs) == 0 {
		t.Fatal("a.bin has no chunks")
	}
	for _, r := range refs {
		if _, err := v.local.Envelope(r.CID); err != nil {
			t.Fatalf("before the edit: %v", err)
		}
	}
	// Edit whichever copy the locations point at.
	other := v.chunks.Places(refs[0].CID)[0].Path
	if err := os.WriteFile(filepath.Join(folderPath, other), []byte("rewritten"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := v.scan(ctx, []string{other}); err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		if _, err := v.local.Envelope(r.CID); err != nil {
			t.Fatalf("after editing %s, the untouched copy's chunk %s cannot be served: %v", other, r.CID, err)
		}
	}
}
