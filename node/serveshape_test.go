package node

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftsync/weft/protocol/chunk"
)

// TestServeRecreatesBySealShape: a chunk served from the folder is
// re-created with the compression choice of the scan's sealing and checked
// by its tag, and is exactly the envelope its CID names; after an edit in
// place that keeps the file's size, modification time and inode (so the
// stat check passes), the changed chunk is refused as no longer local and
// the unchanged ones are still served.
func TestServeRecreatesBySealShape(t *testing.T) {
	n, folderPath := testNode(t)
	v := n.vaultsNow()[0]
	ctx := context.Background()
	content := make([]byte, 600<<10)
	if _, err := rand.Read(content); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(folderPath, "big.bin")
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := v.scan(ctx, nil); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	refs := v.index["big.bin"].Chunks
	v.mu.Unlock()
	if len(refs) < 3 {
		t.Fatalf("big.bin has %d chunks, want several", len(refs))
	}
	for _, r := range refs {
		if k, ok := v.ids.get(r.CID); !ok || !k.shape.known {
			t.Fatalf("chunk %s: the scan recorded no envelope shape (%+v, %v)", r.CID, k, ok)
		}
		env, err := v.localEnvelope(r.CID)
		if err != nil {
			t.Fatalf("serving %s: %v", r.CID, err)
		}
		if err := chunk.VerifyCID(r.CID, env); err != nil {
			t.Fatalf("served envelope of %s: %v", r.CID, err)
		}
	}

	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{content[10] ^ 0xff}, 10); err != nil { // in the first chunk
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	if _, err := v.localEnvelope(refs[0].CID); !errors.Is(err, errNotLocal) {
		t.Fatalf("serving the edited chunk: got %v, want errNotLocal", err)
	}
	for _, r := range refs[1:] {
		env, err := v.localEnvelope(r.CID)
		if err != nil {
			t.Fatalf("serving unchanged %s after the edit: %v", r.CID, err)
		}
		if err := chunk.VerifyCID(r.CID, env); err != nil {
			t.Fatalf("served envelope of unchanged %s: %v", r.CID, err)
		}
	}
}
