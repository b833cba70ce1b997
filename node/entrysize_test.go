package node

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/record"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// TestEntryAtRefLimitFitsAFrame: an entry holding record.MaxRefsPerEntry chunk
// references (the most record puts in one entry, and the most one file
// version may have) must fit one wire frame with room for the message
// around it; otherwise it is written but can never be sent (a 7 GiB file
// once made a 9.25 MB entry against the 8 MiB frame: docs/benchmarks.md).
func TestEntryAtRefLimitFitsAFrame(t *testing.T) {
	id, err := keys.GenerateIdentity(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	root, err := keys.GenerateRootSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	refs := make([]entry.ChunkRef, record.MaxRefsPerEntry)
	var b [8]byte
	for i := range refs {
		binary.LittleEndian.PutUint64(b[:], uint64(i))
		refs[i] = entry.ChunkRef{CID: chunk.SumCID(b[:]), Size: chunk.MaxSize}
	}
	var hash [32]byte
	ver := entry.Version{Path: "a/very/large/file.img", Kind: entry.KindFile, Mode: 0o644, MTime: 1,
		Size: uint64(len(refs)) * chunk.MaxSize, Hash: hash, Chunks: refs}
	e, err := entry.New(entry.Config{Identity: id, Vault: root.Vault().ID, Clock: 1,
		Keys: root.Epoch0().Keys(0), Time: 1, Rand: rand.Reader}, &entry.Body{Versions: []entry.Version{ver}})
	if err != nil {
		t.Fatal(err)
	}
	got := len(e.Bytes())
	t.Logf("%d refs: %d bytes, %.1f bytes a ref", len(refs), got, float64(got)/float64(len(refs)))
	if limit := wire.MaxFrameSize - 64<<10; got > limit {
		t.Fatalf("got an entry of %d bytes at %d refs, want at most %d (a frame less 64 KiB)", got, len(refs), limit)
	}
}

// A file whose chunk list one version cannot hold is reported as skipped
// with ErrFileTooLarge; the other changes of the scan are kept. (The limit
// is lowered: at entry.MaxFileChunks the test would allocate 200 MB.)
// A file over one entry's reference limit is no longer too large: its
// version lists pieces.
func TestRefuseOversized(t *testing.T) {
	const limit = record.MaxRefsPerEntry + 10
	big := make([]entry.ChunkRef, limit+1)
	res := folder.Result{Changes: []folder.Change{
		{Path: "a.txt", Extra: record.Content{Inline: []byte("a")}},
		{Path: "disk.img", Extra: record.Content{Chunks: big}},
		{Path: "z.bin", Extra: record.Content{Chunks: big[:limit]}},
	}}
	refuseOversized(&res, limit)
	var kept []string
	for _, c := range res.Changes {
		kept = append(kept, c.Path)
	}
	if !slices.Equal(kept, []string{"a.txt", "z.bin"}) {
		t.Errorf("got changes %v, want a.txt and z.bin", kept)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Path != "disk.img" || !errors.Is(res.Skipped[0].Err, ErrFileTooLarge) {
		t.Fatalf("got skipped %v, want disk.img with ErrFileTooLarge", res.Skipped)
	}
	t.Log(res.Skipped[0].Err)
}
