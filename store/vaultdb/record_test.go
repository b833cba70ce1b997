package vaultdb

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
)

var cidCmp = cmp.Comparer(func(x, y cid.Cid) bool { return x.Equals(y) })

func goldenRecord(t testing.TB) Record {
	c, err := cid.Prefix{Version: 1, Codec: cid.Raw, MhType: multihash.BLAKE3, MhLength: 32}.Sum([]byte("chunk"))
	if err != nil {
		t.Fatal(err)
	}
	var author [32]byte
	author[0], author[31] = 0xaa, 0xbb
	return Record{
		Version: entry.VersionID{Author: author, Seq: 300, Index: 2},
		Kind:    entry.KindFile, Size: 5, MTime: -1, Inode: 7, Ctime: 1, Mode: 0o644,
		Hash:   [32]byte{0x11},
		Chunks: []entry.ChunkRef{{CID: c, Size: 5}},
	}
}

func TestRecordGolden(t *testing.T) {
	r := goldenRecord(t)
	got, err := r.AppendBinary([]byte{0xee})
	if err != nil {
		t.Fatal(err)
	}
	cb := r.Chunks[0].CID.Bytes()
	want := "ee" + "01" + // prefix, format
		"aa" + hex.EncodeToString(make([]byte, 30)) + "bb" + // author
		"ac02" + "02" + "01" + // seq 300, index 2, kind file
		"05" + "01" + "07" + "02" + "a403" + // size, mtime -1 (zigzag), inode, ctime 1, mode 0o644
		"11" + hex.EncodeToString(make([]byte, 31)) + // hash
		"01" + "24" + hex.EncodeToString(cb) + "05" + // one chunk: 36-byte CID, size 5
		"00" // no target
	if h := hex.EncodeToString(got); h != want {
		t.Fatalf("got  %s\nwant %s", h, want)
	}
	back, err := parseRecord(got[1:])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, back, cidCmp); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestParseRecordRejects(t *testing.T) {
	good, _ := goldenRecord(t).AppendBinary(nil)
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"unknown format", append([]byte{2}, good[1:]...)},
		{"truncated", good[:len(good)-3]},
		{"trailing byte", append(bytes.Clone(good), 0)},
		{"chunk count over limit", append(bytes.Clone(good[:1+32+2+1+1+1+1+1+1+2+32]), 0xff, 0xff, 0xff, 0xff, 0x0f)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parseRecord(tt.b); err == nil {
				t.Fatalf("got nil error for %x", tt.b)
			}
		})
	}
}

// FuzzParseRecord: never panics, and whatever parses encodes and parses
// back to the same record.
func FuzzParseRecord(f *testing.F) {
	good, _ := goldenRecord(f).AppendBinary(nil)
	f.Add(good)
	sym, _ := (Record{Kind: entry.KindSymlink, Target: "a/b"}).AppendBinary(nil)
	f.Add(sym)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseRecord(b)
		if err != nil {
			return
		}
		enc, err := r.AppendBinary(nil)
		if err != nil {
			t.Fatalf("a parsed record does not encode: %v", err)
		}
		back, err := parseRecord(enc)
		if err != nil {
			t.Fatalf("re-encoded record does not parse: %v", err)
		}
		if diff := cmp.Diff(r, back, cidCmp, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	})
}

// TestRecordOfAFileOverOneEntry: a folder record holds a whole chunk list,
// so it takes as many chunks as one version may (a 12 GiB file's 196,682
// failed to commit while the bound was one entry's, entry.MaxRefs).
func TestRecordOfAFileOverOneEntry(t *testing.T) {
	c := chunk.SumCID([]byte("x"))
	r := Record{Kind: entry.KindFile, Size: 200_000 << 16, Chunks: make([]entry.ChunkRef, 200_000)}
	for i := range r.Chunks {
		r.Chunks[i] = entry.ChunkRef{CID: c, Size: 1 << 16}
	}
	b, err := r.AppendBinary(nil)
	if err != nil {
		t.Fatalf("a record of %d chunks: %v", len(r.Chunks), err)
	}
	got, err := parseRecord(b)
	if err != nil || len(got.Chunks) != len(r.Chunks) {
		t.Fatalf("read back %d chunks, %v", len(got.Chunks), err)
	}
}
