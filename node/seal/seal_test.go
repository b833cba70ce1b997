package seal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/ipfs/go-cid"
	"lukechampine.com/blake3"

	"github.com/weftsync/weft/internal/testbytes"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

func sealTestKeys(epoch uint32) chunk.Keys {
	return chunk.KeysFrom(keys.RootSecret{1}.Epoch0().Keys(epoch))
}

// sequentialSeal is the scan as it was: chunk.Chunker, then chunk.Seal of
// each chunk, one after another.
func sequentialSeal(t *testing.T, k chunk.Keys, data []byte) ([32]byte, []Ref) {
	t.Helper()
	c, err := chunk.NewChunker(bytes.NewReader(data), chunk.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	var refs []Ref
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
		refs = append(refs, Ref{ID: s.ID, CID: s.CID, Size: uint32(len(b)), Shape: ShapeOf(s.Envelope)})
	}
	return blake3.Sum256(data), refs
}

// oneByteReader returns at most n bytes per Read, to cut blocks at odd
// places.
type oneByteReader struct {
	r io.Reader
	n int
}

func (o oneByteReader) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), o.n)]) }

// diffRefs compares chunk lists; an envelope shape is compared only where
// both know it (a reused CID comes without one).
func diffRefs(got, want []Ref) string {
	if len(got) != len(want) {
		return fmt.Sprintf("got %d chunks, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.Shape.Known || !w.Shape.Known {
			g.Shape, w.Shape = Shape{}, Shape{}
		}
		if g != w {
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
		{"under one chunk", testbytes.Seeded(1, 20<<10)},
		{"random 5 MiB", testbytes.Seeded(2, 5<<20)},
		{"random, exactly two blocks", testbytes.Seeded(3, 2*sealBlockSize)},
		{"random, a block and a byte", testbytes.Seeded(4, sealBlockSize+1)},
		{"text 5 MiB", testbytes.Text(5 << 20)},
		{"zeros 3 MiB (max-size chunks)", make([]byte, 3<<20)},
	}
	for _, tt := range tests {
		wantHash, want := sequentialSeal(t, k, tt.data)
		for _, workers := range []int{1, 2, 5} {
			for _, readSize := range []int{1 << 30, 100_003} {
				t.Run(fmt.Sprintf("%s/workers=%d/read=%d", tt.name, workers, readSize), func(t *testing.T) {
					r := oneByteReader{r: bytes.NewReader(tt.data), n: readSize}
					hash, got, err := File(context.Background(), k, r, nil, workers)
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
	r := &changingReader{data: testbytes.Seeded(5, 6<<20)}
	hash, got, err := File(context.Background(), k, r, nil, 2)
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
func reuseOf(refs []Ref) map[ReuseKey]cid.Cid {
	m := map[ReuseKey]cid.Cid{}
	for _, r := range refs {
		m[ReuseKey{r.ID, r.Size}] = r.CID
	}
	return m
}

// Reusing an earlier sealing gives the same chunk list as sealing afresh,
// on random and on compressible data, after an overwrite and an insertion.
func TestSealFileReuseMatchesFreshSealing(t *testing.T) {
	k := sealTestKeys(2)
	for _, base := range [][]byte{testbytes.Seeded(6, 6<<20), testbytes.Text(6 << 20)} {
		_, before := sequentialSeal(t, k, base)
		overwrite := bytes.Clone(base)
		copy(overwrite[3<<20+12345:], testbytes.Seeded(7, 1<<20))
		insert := append(append(bytes.Clone(base[:3<<20+12345]), testbytes.Seeded(8, 1_000_000)...), base[3<<20+12345:]...)
		for _, edited := range [][]byte{overwrite, insert} {
			wantHash, want := sequentialSeal(t, k, edited)
			hash, got, err := File(context.Background(), k, bytes.NewReader(edited), reuseOf(before), 2)
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
	data := testbytes.Seeded(9, 1<<20)
	_, refs := sequentialSeal(t, k, data)
	lie := chunk.SumCID([]byte("not this chunk"))
	prev := map[ReuseKey]cid.Cid{
		{refs[0].ID, refs[0].Size}:     lie,
		{refs[1].ID, refs[1].Size + 1}: lie,
	}
	_, got, err := File(context.Background(), k, bytes.NewReader(data), prev, 2)
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
	r := io.MultiReader(bytes.NewReader(testbytes.Seeded(10, 3<<20)), errReader{boom})
	if _, _, err := File(context.Background(), sealTestKeys(2), r, nil, 2); !errors.Is(err, boom) {
		t.Errorf("got %v, want the read error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := File(ctx, sealTestKeys(2), bytes.NewReader(testbytes.Seeded(10, 3<<20)), nil, 2); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestChunkIDs(t *testing.T) {
	id := func(i int) chunk.ID { return chunk.ID{byte(i), byte(i >> 8), byte(i >> 16)} }
	c := func(i int) cid.Cid { return chunk.SumCID([]byte{byte(i), byte(i >> 8), byte(i >> 16)}) }
	ids := NewIDs()
	ids.AddSealed(2, []Ref{{ID: id(1), CID: c(1), Size: 10}, {ID: id(2), CID: c(2), Size: 20}})
	ids.Add(c(3), 2, id(3), false, Shape{}) // from a peer's envelope
	ids.Add(c(4), 1, id(4), true, Shape{})  // another epoch
	prev := []entry.ChunkRef{{CID: c(1), Size: 10}, {CID: c(2), Size: 20}, {CID: c(3), Size: 30}, {CID: c(4), Size: 40}, {CID: c(5), Size: 50}}
	got := ids.ReuseFor(2, prev)
	want := map[ReuseKey]cid.Cid{{id(1), 10}: c(1), {id(2), 20}: c(2)}
	if len(got) != len(want) {
		t.Fatalf("reuse: got %d chunks, want %d (sealed here, this epoch)", len(got), len(want))
	}
	for k, v := range want {
		if !got[k].Equals(v) {
			t.Errorf("reuse of %v: got %v, want %v", k, got[k], v)
		}
	}
	if k, ok := ids.Get(c(3)); !ok || k.ID != id(3) || k.Sealed {
		t.Errorf("get: got %+v %v, want the peer's identity, not sealed here", k, ok)
	}
	// A peer's envelope does not make a chunk sealed here forget it was,
	// and what says nothing of the envelope's shape keeps the one known.
	shape := Shape{Known: true, Compressed: true, Tag: [chunk.TagSize]byte{9}}
	ids.Add(c(1), 2, id(1), true, shape)
	ids.Add(c(1), 2, id(1), false, Shape{})
	if k, _ := ids.Get(c(1)); !k.Sealed || k.Shape != shape {
		t.Errorf("a chunk sealed here lost its mark or shape when a peer sent it: %+v", k)
	}
	for i := range maxChunkIDs + 10 {
		ids.Add(c(1000+i), 2, id(1000+i), true, Shape{})
	}
	if n := len(ids.m); n > maxChunkIDs {
		t.Errorf("got %d identities held, want at most %d", n, maxChunkIDs)
	}
	var none *IDs
	none.Add(c(1), 2, id(1), true, Shape{})
	if _, ok := none.Get(c(1)); ok || none.ReuseFor(2, prev) != nil {
		t.Errorf("a nil IDs knew something")
	}
}

// TestSealFileAllocationsBounded: sealing allocates what its blocks,
// envelope buffers and chunk list need, not a buffer per chunk. Each
// worker's envelope buffer came back clipped to the last envelope, so
// every larger chunk after it took a new one: 177 MB for a 256 MiB file.
// 32 MiB of incompressible data (about 500 chunks) must seal within 8 MiB
// of allocations (its blocks and envelopes are pooled; the list of refs
// and the hasher are what is left).
func TestSealFileAllocationsBounded(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop what is put back at random, so the allocations would count it, not sealing; make test runs this without -race")
	}
	k := sealTestKeys(3)
	data := testbytes.Seeded(7, 32<<20)
	if _, _, err := File(context.Background(), k, bytes.NewReader(data), nil, 2); err != nil { // warm the pools
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, _, err := File(context.Background(), k, bytes.NewReader(data), nil, 2); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Fatalf("sealing 32 MiB allocated %d MiB, want at most 8 MiB", got>>20)
	}
}
