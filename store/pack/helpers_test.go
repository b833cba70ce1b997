package pack

import (
	"math/rand/v2"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

// chunkCID names data the way weft names chunks: CIDv1, raw codec, BLAKE3-256.
func chunkCID(t testing.TB, data []byte) cid.Cid {
	t.Helper()
	c, err := cid.Prefix{Version: 1, Codec: cid.Raw, MhType: multihash.BLAKE3, MhLength: 32}.Sum(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// randChunk returns n random bytes and their CID.
func randChunk(t testing.TB, rng *rand.Rand, n int) (cid.Cid, []byte) {
	data := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			data[i+j] = byte(v >> (8 * j))
		}
	}
	return chunkCID(t, data), data
}

func openStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// mustVerify fails the test unless the index and the packs agree.
func mustVerify(t testing.TB, s *Store) VerifyReport {
	t.Helper()
	rep, err := s.Verify()
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if len(rep.Problems) > 0 {
		t.Fatalf("Verify found %d problems, first: %s", len(rep.Problems), rep.Problems[0])
	}
	return rep
}
