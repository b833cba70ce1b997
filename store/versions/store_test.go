package versions

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time { return c.t }

// envelopes stands in for a folder: chunk contents by CID.
type envelopes map[cid.Cid][]byte

func (e envelopes) get(c cid.Cid) ([]byte, error) {
	b, ok := e[c]
	if !ok {
		return nil, errors.New("not here")
	}
	return b, nil
}

// chunkOf makes a chunk whose CID is the hash of its bytes (as the pack
// checks on every read).
func chunkOf(t *testing.T, env envelopes, s string) ChunkRef {
	b := []byte(s)
	c := testCID(t, s)
	env[c] = b
	return ChunkRef{CID: c, Size: uint32(len(b))}
}

func TestKeepPruneAndReopen(t *testing.T) {
	clk := &fakeClock{time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	s, err := Open(Config{Dir: dir, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	env := envelopes{}
	shared := chunkOf(t, env, "shared chunk bytes")
	v1 := Kept{ID: []byte("v1"), Path: "a", Size: 40, Chunks: []ChunkRef{shared, chunkOf(t, env, "first tail")}}
	v2 := Kept{ID: []byte("v2"), Path: "a", Size: 40, Chunks: []ChunkRef{shared, chunkOf(t, env, "second tail")}}
	if _, err := s.Keep(v1, env.get); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(time.Hour)
	added, err := s.Keep(v2, env.get)
	if err != nil {
		t.Fatal(err)
	}
	if added != int64(len("second tail")) {
		t.Fatalf("second version added %d bytes, want only its new chunk", added)
	}
	if !s.Holds([]byte("v1")) || !s.Holds([]byte("v2")) || s.Holds([]byte("v3")) {
		t.Fatal("Holds wrong")
	}
	// A version whose content is gone is not named.
	gone := Kept{ID: []byte("v3"), Path: "b", Chunks: []ChunkRef{{CID: testCID(t, "nowhere"), Size: 7}}}
	if _, err := s.Keep(gone, env.get); !errors.Is(err, ErrContent) || s.Has([]byte("v3")) {
		t.Fatalf("Keep of missing content: %v, named %v", err, s.Has([]byte("v3")))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(Config{Dir: dir, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if u := s.Usage(); u.Versions != 2 {
		t.Fatalf("after reopen: %d versions", u.Versions)
	}
	// A budget that holds v2 only: v1 (kept first) goes; the shared chunk stays.
	budget := int64(len("shared chunk bytes") + len("second tail"))
	res, err := s.Prune(context.Background(), Policy{Budget: budget}, func(id []byte) bool { return string(id) == "v2" })
	if err != nil {
		t.Fatal(err)
	}
	if res.Dropped != 1 || res.Retained != 1 || s.Has([]byte("v1")) || !s.Holds([]byte("v2")) {
		t.Fatalf("prune: %+v; v1 named %v, v2 held %v", res, s.Has([]byte("v1")), s.Holds([]byte("v2")))
	}
	if b, err := s.Chunk(shared.CID); err != nil || string(b) != "shared chunk bytes" {
		t.Fatalf("shared chunk after prune: %q, %v", b, err)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x84, 0x61, 'a', 0x01, 0x02, 0x80})
	f.Add([]byte{0x84, 0x61, 'a', 0x01, 0x02, 0x81, 0x82, 0x41, 0x00, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = decodeRecord(b)
	})
}
