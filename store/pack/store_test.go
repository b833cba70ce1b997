package pack

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

func TestPutGetHas(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, Config{Dir: dir})
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, 2048, 100_000, 4 << 20}
	for _, n := range sizes {
		c, data := randChunk(t, rng, n)
		if err := s.Put(c, data); err != nil {
			t.Fatalf("Put(%d bytes): %v", n, err)
		}
		if err := s.Put(c, data); err != nil {
			t.Fatalf("second Put(%d bytes): %v", n, err)
		}
		got, err := s.Get(c)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Get(%d bytes): got %d bytes, %v; want %d bytes", n, len(got), err, n)
		}
		if ok, err := s.Has(c); !ok || err != nil {
			t.Fatalf("Has = %v, %v; want true", ok, err)
		}
	}
	st := s.Stats()
	if st.Chunks != int64(len(sizes)) || st.Appends != uint64(len(sizes)) {
		t.Errorf("got %d chunks, %d appends; want %d of each (duplicates are not stored)", st.Chunks, st.Appends, len(sizes))
	}
	missing, _ := randChunk(t, rng, 10)
	if _, err := s.Get(missing); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(missing): got %v, want ErrNotFound", err)
	}
	if ok, _ := s.Has(missing); ok {
		t.Errorf("Has(missing) = true")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, Config{Dir: dir})
	defer s.Close()
	if got := s.Stats().Chunks; got != int64(len(sizes)) {
		t.Errorf("after reopen: got %d chunks, want %d", got, len(sizes))
	}
	mustVerify(t, s)
}

func TestPutRejects(t *testing.T) {
	s := openStore(t, Config{Dir: t.TempDir()})
	defer s.Close()
	c := chunkCID(t, []byte("hello"))
	if err := s.Put(c, []byte("hellO")); !errors.Is(err, ErrCIDMismatch) {
		t.Errorf("Put with the wrong bytes: got %v, want ErrCIDMismatch", err)
	}
	big := make([]byte, MaxChunkSize+1)
	if err := s.Put(chunkCID(t, big), big); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Put of %d bytes: got %v, want ErrTooLarge", len(big), err)
	}
	if s.Stats().Appends != 0 {
		t.Errorf("rejected Puts appended records")
	}
}

func TestClosed(t *testing.T) {
	s := openStore(t, Config{Dir: t.TempDir()})
	s.Close()
	c := chunkCID(t, []byte("x"))
	if err := s.Put(c, []byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Put after Close: got %v, want ErrClosed", err)
	}
	if _, err := s.Get(c); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: got %v, want ErrClosed", err)
	}
}

// TestGetCorrupt flips one byte of each part of a stored record and checks
// that Get reports corruption and returns no bytes.
func TestGetCorrupt(t *testing.T) {
	for _, at := range []struct {
		name string
		off  int64
	}{{"magic", 0}, {"crc", 5}, {"lengths", 9}, {"cid", 20}, {"data", 200}, {"last byte", -1}} {
		t.Run(at.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, Config{Dir: dir})
			defer s.Close()
			rng := rand.New(rand.NewPCG(3, 4))
			c, data := randChunk(t, rng, 4096)
			if err := s.Put(c, data); err != nil {
				t.Fatal(err)
			}
			l, err := s.lookup(c.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			off := l.off + at.off
			if at.off < 0 {
				off = l.off + l.length + at.off
			}
			flipByte(t, s.packPath(l.pack), off)
			got, err := s.Get(c)
			if !errors.Is(err, ErrCorrupt) || got != nil {
				t.Errorf("got %d bytes, %v; want no bytes and ErrCorrupt", len(got), err)
			}
		})
	}
}

func flipByte(t testing.TB, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestDagCBORCIDs: the store verifies a block by the hash its CID names,
// whatever the codec, so a relay keeps chunk-list pieces (CIDv1, codec
// dag-cbor, BLAKE3-256) beside the chunks: Put checks their bytes, Get and
// the scrub verify them, and an index rebuilt from the packs keeps them.
func TestDagCBORCIDs(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, Config{Dir: dir})
	data := []byte{0x82, 0x01, 0x80} // any bytes: the store does not parse them
	c, err := cid.Prefix{Version: 1, Codec: cid.DagCBOR, MhType: multihash.BLAKE3, MhLength: 32}.Sum(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(c, []byte{0x82, 0x01, 0x81}); !errors.Is(err, ErrCIDMismatch) {
		t.Fatalf("Put with the wrong bytes: got %v, want ErrCIDMismatch", err)
	}
	if err := s.Put(c, data); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if got, err := s.Get(c); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get: got %x, %v; want %x", got, err, data)
	}
	if res, err := s.ScrubPass(context.Background(), 0); err != nil || res.Checked != 1 || len(res.Corrupt) != 0 {
		t.Fatalf("scrub: checked %d, corrupt %v, %v; want 1 checked, none corrupt", res.Checked, res.Corrupt, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "index")); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, Config{Dir: dir})
	defer s.Close()
	if got, err := s.Get(c); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get after an index rebuild: got %x, %v; want %x", got, err, data)
	}
	mustVerify(t, s)
}
