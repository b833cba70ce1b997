package node

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftsync/weft/internal/testbytes"
	"github.com/weftsync/weft/node/localchunks"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// TestServeRecreatesBySealShape: a chunk re-created from the folder (what
// serving does before it falls back to the local version store) is
// re-created with the compression choice of the scan's sealing and checked
// by its tag, and is exactly the envelope its CID names; after an edit in
// place that keeps the file's size, modification time and inode (so the
// stat check passes), the changed chunk is refused as no longer local and
// the unchanged ones are still served.
func TestServeRecreatesBySealShape(t *testing.T) {
	random := make([]byte, 600<<10)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	t.Run("stored", func(t *testing.T) { testServeBySealShape(t, random, false) })
	t.Run("compressed", func(t *testing.T) { testServeBySealShape(t, testbytes.Text(600<<10), true) })
}

func testServeBySealShape(t *testing.T, content []byte, compressed bool) {
	// Nothing in the background: the edit below keeps size, mtime and
	// inode, so a watcher's rescan or the scrub takes it for rot and moves
	// the file aside (rot.go), which happened once under -race.
	n, folderPath := testNodeWith(t, Config{NoWatcher: true, NoScrub: true})
	v := n.vaultsNow()[0]
	ctx := context.Background()
	p := filepath.Join(folderPath, "big.bin")
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := v.scan(ctx, nil); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	refs := v.index.Rec("big.bin").Chunks
	v.mu.Unlock()
	if len(refs) < 3 {
		t.Fatalf("big.bin has %d chunks, want several", len(refs))
	}
	for _, r := range refs {
		if k, ok := v.crypt.IDs().Get(r.CID); !ok || !k.Shape.Known || k.Shape.Compressed != compressed {
			t.Fatalf("chunk %s: the scan recorded no envelope shape, or not compressed %v (%+v, %v)", r.CID, compressed, k, ok)
		}
		env, _, err := v.chunks.ChunkInto(r.CID, nil, nil, true)
		if err != nil {
			t.Fatalf("serving %s: %v", r.CID, err)
		}
		if err := chunk.VerifyCID(r.CID, env); err != nil {
			t.Fatalf("served envelope of %s: %v", r.CID, err)
		}
	}

	// The tag, not the CID, decides on that path: chunk 0's identity and
	// shape recorded under another CID, at chunk 0's place, re-create
	// chunk 0's envelope, which the CID check of the other path (and of
	// every fetcher) refuses. So the envelopes above came from the shape.
	other := chunk.SumCID([]byte("another chunk"))
	k0, _ := v.crypt.IDs().Get(refs[0].CID)
	v.mu.Lock()
	rec := v.index.Rec("big.bin")
	v.mu.Unlock()
	alias := rec
	alias.Chunks = []entry.ChunkRef{{CID: other, Size: refs[0].Size}}
	v.chunks.Indexed("big.bin", vaultdb.Record{}, false, alias)
	v.crypt.IDs().Add(other, k0.Epoch, k0.ID, k0.Sealed, k0.Shape)
	env, _, err := v.chunks.ChunkInto(other, nil, nil, true)
	if err != nil {
		t.Fatalf("re-creating by shape under another CID: %v", err)
	}
	if chunk.VerifyCID(refs[0].CID, env) != nil {
		t.Fatal("re-created by shape, the envelope is not chunk 0's")
	}
	v.chunks.Indexed("big.bin", alias, true, vaultdb.Record{})
	if v.chunks.Has(other) {
		t.Fatal("the alias is still placed after it was dropped")
	}

	// A peer's envelope, though true to its CID, records no shape: only
	// this device's own sealing stands in for the CID check.
	peerEnv, err := chunk.Seal(v.crypt.ChunkKeys(), []byte("a chunk a peer sealed"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.crypt.OpenVerifiedChunk(nil, peerEnv.CID, peerEnv.Envelope); err != nil {
		t.Fatal(err)
	}
	if k, ok := v.crypt.IDs().Get(peerEnv.CID); !ok || k.Shape.Known {
		t.Fatalf("a peer's envelope: known %v, shape %+v; want its identity and no shape", ok, k.Shape)
	}

	overwriteKeepingStat(t, p, 10, []byte{content[10] ^ 0xff}) // in the first chunk
	if _, _, err := v.chunks.ChunkInto(refs[0].CID, nil, nil, true); !errors.Is(err, localchunks.ErrNotLocal) {
		t.Fatalf("serving the edited chunk: got %v, want localchunks.ErrNotLocal", err)
	}
	for _, r := range refs[1:] {
		env, _, err := v.chunks.ChunkInto(r.CID, nil, nil, true)
		if err != nil {
			t.Fatalf("serving unchanged %s after the edit: %v", r.CID, err)
		}
		if err := chunk.VerifyCID(r.CID, env); err != nil {
			t.Fatalf("served envelope of unchanged %s: %v", r.CID, err)
		}
	}
}

// overwriteKeepingStat writes data at off of the file at p in place and
// puts its mtime back: size, inode and mtime are what the scan recorded,
// only the content (and ctime) differ, as after rot or an edit that hides.
func overwriteKeepingStat(t *testing.T, p string, off int64, data []byte) {
	t.Helper()
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
}
