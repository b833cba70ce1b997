package localchunks

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/keyring"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/vaultdb"
)

// lab is a folder on a MemFS and a key ring that knows one epoch.
type lab struct {
	t     *testing.T
	fs    *folder.MemFS
	crypt *keyring.Ring
	files *Files
}

func newLab(t *testing.T) *lab {
	cr := keyring.New()
	cr.Set(map[uint32]keys.EpochSecret{0: {7}})
	fs := folder.NewMemFS(folder.MemFSConfig{})
	return &lab{t: t, fs: fs, crypt: cr, files: NewFiles(fs, cr)}
}

// write puts data at p (through a temp file and a rename, so an existing
// file is replaced by a new inode).
func (l *lab) write(p string, data []byte) {
	l.t.Helper()
	f, err := l.fs.CreateTemp("", ".tmp")
	if err != nil {
		l.t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		l.t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		l.t.Fatal(err)
	}
	if err := l.fs.Rename(f.Path(), p); err != nil {
		l.t.Fatal(err)
	}
}

// record is what a scan of p records: its stat now and the chunks given,
// laid end to end from offset 0.
func (l *lab) record(p string, chunks ...[]byte) (vaultdb.Record, []cid.Cid) {
	l.t.Helper()
	info, err := l.fs.Lstat(p)
	if err != nil {
		l.t.Fatal(err)
	}
	rec := vaultdb.Record{Kind: 1, Size: uint64(info.Size), MTime: info.MTime, Inode: info.Inode}
	var cids []cid.Cid
	for _, c := range chunks {
		s, err := chunk.Seal(l.crypt.ChunkKeys(), c)
		if err != nil {
			l.t.Fatal(err)
		}
		rec.Chunks = append(rec.Chunks, entry.ChunkRef{CID: s.CID, Size: uint32(len(c))})
		cids = append(cids, s.CID)
	}
	return rec, cids
}

// TestFilesRecreatesIndexedChunks: a chunk the index places in a file is
// re-created from the file's bytes, as the envelope its CID names and as
// its plaintext, at the offset the index gives.
func TestFilesRecreatesIndexedChunks(t *testing.T) {
	l := newLab(t)
	one, two := bytes.Repeat([]byte("one "), 300), bytes.Repeat([]byte("two "), 500)
	l.write("a.txt", append(append([]byte{}, one...), two...))
	rec, cids := l.record("a.txt", one, two)
	l.files.Indexed("a.txt", vaultdb.Record{}, false, rec)

	for i, want := range [][]byte{one, two} {
		env, _, err := l.files.ChunkInto(cids[i], nil, nil, true)
		if err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if err := chunk.VerifyCID(cids[i], env); err != nil {
			t.Fatalf("chunk %d: the envelope is not the one its CID names: %v", i, err)
		}
		_, plain, err := l.files.ChunkInto(cids[i], nil, nil, false)
		if err != nil || !bytes.Equal(plain, want) {
			t.Fatalf("chunk %d: plaintext %q, %v", i, plain, err)
		}
	}
	if p := l.files.Places(cids[1]); len(p) != 1 || p[0].Path != "a.txt" || p[0].Offset != int64(len(one)) {
		t.Fatalf("places of chunk 1: %+v, want a.txt at %d", p, len(one))
	}
}

// TestFilesRefusesChangedFiles: a file replaced since its scan (another
// stat), or a place whose bytes are not the chunk although the stat
// matches, gives ErrNotLocal, never a wrong chunk; another place that
// still holds the chunk serves it.
func TestFilesRefusesChangedFiles(t *testing.T) {
	l := newLab(t)
	data := bytes.Repeat([]byte("kept "), 400)
	l.write("a.txt", data)
	l.write("b.txt", data)
	recA, cids := l.record("a.txt", data)
	recB, _ := l.record("b.txt", data)
	l.files.Indexed("a.txt", vaultdb.Record{}, false, recA)
	l.write("a.txt", bytes.Repeat([]byte("edit "), 400)) // same size, new inode

	if _, _, err := l.files.ChunkInto(cids[0], nil, nil, true); !errors.Is(err, ErrNotLocal) {
		t.Fatalf("a replaced file: got %v, want ErrNotLocal", err)
	}
	l.files.Indexed("b.txt", vaultdb.Record{}, false, recB)
	env, err := l.files.Envelope(cids[0])
	if err != nil || chunk.VerifyCID(cids[0], env) != nil {
		t.Fatalf("b.txt still holds the chunk: %v", err)
	}

	// c.txt's stat is what the record says, its bytes are not the chunk.
	l.write("c.txt", bytes.Repeat([]byte("else "), 400))
	recC, _ := l.record("c.txt")
	recC.Chunks = []entry.ChunkRef{{CID: cids[0], Size: uint32(len(data))}}
	l.files.Indexed("b.txt", recB, true, vaultdb.Record{})
	l.files.Indexed("c.txt", vaultdb.Record{}, false, recC)
	for _, env := range []bool{true, false} {
		if _, _, err := l.files.ChunkInto(cids[0], nil, nil, env); !errors.Is(err, ErrNotLocal) {
			t.Fatalf("bytes that are not the chunk (envelope %v): got %v, want ErrNotLocal", env, err)
		}
	}
}

// TestFilesForgetsAndBoundsPlaces: Indexed moves a path's places from the
// old record to the new one, and a chunk held by many files is placed in
// at most maxLocations of them.
func TestFilesForgetsAndBoundsPlaces(t *testing.T) {
	l := newLab(t)
	data := bytes.Repeat([]byte{0}, 1000)
	var recs []vaultdb.Record
	var c cid.Cid
	for i := range maxLocations + 3 {
		p := fmt.Sprintf("zeros-%d", i)
		l.write(p, data)
		rec, cids := l.record(p, data)
		c = cids[0]
		recs = append(recs, rec)
		l.files.Indexed(p, vaultdb.Record{}, false, rec)
	}
	if n := len(l.files.Places(c)); n != maxLocations {
		t.Fatalf("%d places remembered, want %d", n, maxLocations)
	}
	for i, rec := range recs {
		l.files.Indexed(fmt.Sprintf("zeros-%d", i), rec, true, vaultdb.Record{})
	}
	if l.files.Has(c) {
		t.Fatal("every file holding the chunk left the index, and it is still placed")
	}
	if _, _, err := l.files.ChunkInto(c, nil, nil, true); !errors.Is(err, ErrNotLocal) {
		t.Fatalf("an unplaced chunk: got %v, want ErrNotLocal", err)
	}
}
