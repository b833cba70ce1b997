package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/keys"
	"lukechampine.com/blake3"
)

func sealTestKeys(epoch uint32) chunk.Keys {
	return chunk.KeysFrom(keys.RootSecret{1}.Epoch0().Keys(epoch))
}

// sequentialSeal is the scan as it was: chunk.Chunker, then chunk.Seal of
// each chunk, one after another.
func sequentialSeal(t *testing.T, k chunk.Keys, data []byte) ([32]byte, []sealedRef) {
	t.Helper()
	c, err := chunk.NewChunker(bytes.NewReader(data), chunk.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	var refs []sealedRef
	for {
		b, err := c.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		s, err := chunk.Seal(k, b)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, sealedRef{ID: s.ID, CID: s.CID, Size: uint32(len(b))})
	}
	return blake3.Sum256(data), refs
}

func seededBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// textBytes is compressible: Seal compresses its chunks.
func textBytes(n int) []byte {
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		fmt.Fprintf(&sb, "line %d of a note that weft keeps in sync, peer to peer.\n", i)
	}
	return []byte(sb.String()[:n])
}

// oneByteReader returns at most n bytes per Read, to cut blocks at odd
// places.
type oneByteReader struct {
	r io.Reader
	n int
}

func (o oneByteReader) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), o.n)]) }

func diffRefs(got, want []sealedRef) string {
	if len(got) != len(want) {
		return fmt.Sprintf("got %d chunks, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Sprintf("chunk %d: got %v/%d, want %v/%d", i, got[i].CID, got[i].Size, want[i].CID, want[i].Size)
		}
	}
	return ""
}

func TestSealFileMatchesSequential(t *testing.T) {
	k := sealTestKeys(2)
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"one byte", []byte{7}},
		{"under one chunk", seededBytes(1, 20<<10)},
		{"random 5 MiB", seededBytes(2, 5<<20)},
		{"random, exactly two blocks", seededBytes(3, 2*sealBlockSize)},
		{"random, a block and a byte", seededBytes(4, sealBlockSize+1)},
		{"text 5 MiB", textBytes(5 << 20)},
		{"zeros 3 MiB (max-size chunks)", make([]byte, 3<<20)},
	}
	for _, tt := range tests {
		wantHash, want := sequentialSeal(t, k, tt.data)
		for _, workers := range []int{1, 2, 5} {
			for _, readSize := range []int{1 << 30, 100_003} {
				t.Run(fmt.Sprintf("%s/workers=%d/read=%d", tt.name, workers, readSize), func(t *testing.T) {
					r := oneByteReader{r: bytes.NewReader(tt.data), n: readSize}
					hash, got, err := sealFile(context.Background(), k, r, nil, workers)
					if err != nil {
						t.Fatal(err)
					}
					if hash != wantHash {
						t.Errorf("got hash %x, want %x", hash, wantHash)
					}
					if d := diffRefs(got, want); d != "" {
						t.Error(d)
					}
				})
			}
		}
	}
}

// changingReader serves data and, once it has served half of it, changes
// the bytes it has not served yet: a file written to while it is scanned.
type changingReader struct {
	data   []byte
	off    int
	served bytes.Buffer
}

func (c *changingReader) Read(p []byte) (int, error) {
	if c.off >= len(c.data) {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 300_000)], c.data[c.off:])
	c.served.Write(p[:n])
	c.off += n
	if c.off >= len(c.data)/2 && c.off < len(c.data) {
		c.data[c.off] ^= 0xff
	}
	return n, nil
}

// A file that changes during the scan gets the chunk list of exactly the
// bytes the scan read (the scanner sees the change in its stat afterwards
// and scans again).
func TestSealFileOfAFileChangingMidScan(t *testing.T) {
	k := sealTestKeys(2)
	r := &changingReader{data: seededBytes(5, 6<<20)}
	hash, got, err := sealFile(context.Background(), k, r, nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	wantHash, want := sequentialSeal(t, k, r.served.Bytes())
	if hash != wantHash {
		t.Errorf("got hash %x, want the hash of the bytes read %x", hash, wantHash)
	}
	if d := diffRefs(got, want); d != "" {
		t.Error(d)
	}
}

// reuseOf is the reuse map of an earlier sealing.
func reuseOf(refs []sealedRef) map[reuseKey]cid.Cid {
	m := map[reuseKey]cid.Cid{}
	for _, r := range refs {
		m[reuseKey{r.ID, r.Size}] = r.CID
	}
	return m
}

// Reusing an earlier sealing gives the same chunk list as sealing afresh,
// on random and on compressible data, after an overwrite and an insertion.
func TestSealFileReuseMatchesFreshSealing(t *testing.T) {
	k := sealTestKeys(2)
	for _, base := range [][]byte{seededBytes(6, 6<<20), textBytes(6 << 20)} {
		_, before := sequentialSeal(t, k, base)
		overwrite := bytes.Clone(base)
		copy(overwrite[3<<20+12345:], seededBytes(7, 1<<20))
		insert := append(append(bytes.Clone(base[:3<<20+12345]), seededBytes(8, 1_000_000)...), base[3<<20+12345:]...)
		for _, edited := range [][]byte{overwrite, insert} {
			wantHash, want := sequentialSeal(t, k, edited)
			hash, got, err := sealFile(context.Background(), k, bytes.NewReader(edited), reuseOf(before), 2)
			if err != nil {
				t.Fatal(err)
			}
			if hash != wantHash {
				t.Errorf("got hash %x, want %x", hash, wantHash)
			}
			if d := diffRefs(got, want); d != "" {
				t.Error(d)
			}
		}
	}
}

// The reuse map decides CIDs: a chunk found in it is not sealed again
// (shown by a map that lies), and one of another size is.
func TestSealFileTakesReusedCIDs(t *testing.T) {
	k := sealTestKeys(2)
	data := seededBytes(9, 1<<20)
	_, refs := sequentialSeal(t, k, data)
	lie := chunk.SumCID([]byte("not this chunk"))
	prev := map[reuseKey]cid.Cid{
		{refs[0].ID, refs[0].Size}:     lie,
		{refs[1].ID, refs[1].Size + 1}: lie,
	}
	_, got, err := sealFile(context.Background(), k, bytes.NewReader(data), prev, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].CID.Equals(lie) {
		t.Errorf("chunk 0: got %v, want the reused %v", got[0].CID, lie)
	}
	if !got[1].CID.Equals(refs[1].CID) {
		t.Errorf("chunk 1 (reuse entry of another size): got %v, want the sealed %v", got[1].CID, refs[1].CID)
	}
}

func TestSealFileReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	r := io.MultiReader(bytes.NewReader(seededBytes(10, 3<<20)), errReader{boom})
	if _, _, err := sealFile(context.Background(), sealTestKeys(2), r, nil, 2); !errors.Is(err, boom) {
		t.Errorf("got %v, want the read error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := sealFile(ctx, sealTestKeys(2), bytes.NewReader(seededBytes(10, 3<<20)), nil, 2); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestSealedCache(t *testing.T) {
	k := sealTestKeys(2)
	refs := func(n int) []sealedRef {
		out := make([]sealedRef, n)
		for i := range out {
			out[i] = sealedRef{ID: chunk.ID{byte(i), byte(i >> 8), byte(i >> 16)}, CID: chunk.SumCID([]byte{byte(i)}), Size: 1}
		}
		return out
	}
	c := newSealedCache()
	c.keep("a", k, refs(minCachedChunks))
	if got := len(c.reuse("a", k)); got != minCachedChunks {
		t.Errorf("reuse of a kept file: got %d chunks, want %d", got, minCachedChunks)
	}
	if got := c.reuse("a", sealTestKeys(3)); got != nil {
		t.Errorf("reuse under other keys: got %d chunks, want none", len(got))
	}
	c.keep("small", k, refs(minCachedChunks-1))
	if got := c.reuse("small", k); got != nil {
		t.Errorf("a file under minCachedChunks was kept")
	}
	c.keep("b", k, refs(maxCachedChunks-minCachedChunks))
	c.keep("c", k, refs(minCachedChunks))
	if c.reuse("a", k) != nil || c.reuse("b", k) == nil || c.reuse("c", k) == nil {
		t.Errorf("eviction: want a (oldest) dropped, b and c kept")
	}
	if c.total > maxCachedChunks {
		t.Errorf("got %d chunks held, want at most %d", c.total, maxCachedChunks)
	}
	c.keep("b", k, refs(maxCachedChunks+1))
	if c.reuse("b", k) != nil {
		t.Errorf("a file over the bound replaced b's list")
	}
	var nilCache *sealedCache
	nilCache.keep("a", k, refs(minCachedChunks))
	if nilCache.reuse("a", k) != nil {
		t.Errorf("a nil cache reused something")
	}
}
