package seal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
)

// A scan seals every chunk of a large file to learn its CID (the CID hashes
// the envelope). Cutting is sequential (a boundary depends on the one
// before), but each chunk's identity, compression probe, encryption and CID
// depend on that chunk alone, and the whole-file hash only on the order of
// the bytes. So File reads the file a block at a time, cuts the block
// on its own goroutine, and hands the block's chunks to a pool of workers
// while a further goroutine feeds the block to the whole-file hash; the
// next block is read and cut meanwhile. Results go back in chunk order, so
// the chunk list is exactly a sequential scan's.

// sealBlockSize is how many bytes of a file one round of the pipeline
// holds: about 16 average chunks, enough to keep every worker busy while
// the next block is read. Two blocks are in flight, plus one envelope
// buffer per worker, so a scan of any size holds about 2.5 MiB (2 MiB
// blocks cost B5's sender 13 MiB more peak RSS and no measurable CPU).
const sealBlockSize = 1 << 20

// blockPool and envPool recycle the pipeline's buffers across files, so a
// scan of many large files (B5) does not allocate and zero 5 MiB per file.
var (
	blockPool = sync.Pool{New: func() any { b := make([]byte, sealBlockSize); return &b }}
	envPool   = sync.Pool{New: func() any { b := make([]byte, 0, chunk.MaxEnvelopeSize); return &b }}
)

// Ref is one chunk as a scan sealed it: its plaintext identity beside
// its CID and size, and the shape of its envelope when the scan sealed it
// (not when it took the CID of an earlier sealing).
type Ref struct {
	ID    chunk.ID
	CID   cid.Cid
	Size  uint32
	Shape Shape
}

// Shape is what an envelope this device sealed looked like beyond its
// identity: whether its payload is compressed, and its tag. Sealing the
// same plaintext under the same identity and epoch with the same choice
// gives the same envelope, so a chunk server that re-creates the chunk
// from the folder seals it with that choice (no compression probe) and
// compares the tag instead of hashing the envelope for its CID
// (chunkAtInto). Only this device's own sealings record one: a peer's
// envelope, though true to its CID, may have been compressed otherwise.
type Shape struct {
	Known      bool
	Compressed bool
	Tag        [chunk.TagSize]byte
}

// ShapeOf is env's shape; unknown when env is not a well-formed envelope.
func ShapeOf(env []byte) Shape {
	h, err := chunk.ParseHeader(env)
	if err != nil {
		return Shape{}
	}
	tag, ok := chunk.Tag(env)
	return Shape{Known: ok, Compressed: h.Compressed, Tag: tag}
}

// ReuseKey finds an earlier sealing of a chunk by plaintext identity and
// size. Within one epoch's keys sealing is deterministic, so a chunk with
// the identity and size of one sealed before has that one's CID: the scan
// of an edited file seals only the chunks the edit changed.
type ReuseKey struct {
	id   chunk.ID
	size uint32
}

// File cuts the content of r into chunks under the format's params,
// seals each under k to learn its CID, and hashes the whole content with
// BLAKE3-256. Chunks whose identity and size are in prev take the CID
// recorded there instead of being sealed again (prev must hold only what
// sealing under these same k gave). It runs up to workers goroutines
// sealing (GOMAXPROCS when workers <= 0) and one hashing, all started and
// waited for here. It returns the chunks in order, or the first error: a
// read error (wrapped), or ctx.Err() once ctx is done. The result is
// exactly what chunk.NewChunker and chunk.Seal give one chunk after
// another (TestSealFileMatchesSequential).
func File(ctx context.Context, k chunk.Keys, r io.Reader, prev map[ReuseKey]cid.Cid, workers int) (hash [32]byte, refs []Ref, err error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := chunk.DefaultParams()
	whole := chunk.NewHasher()
	var blocks [2]*[]byte
	defer func() {
		for _, b := range blocks {
			if b != nil {
				blockPool.Put(b)
			}
		}
	}()
	block := func(i int) []byte {
		if blocks[i] == nil {
			blocks[i] = blockPool.Get().(*[]byte)
		}
		return *blocks[i]
	}
	envs := make([]*[]byte, workers)
	for i := range envs {
		envs[i] = envPool.Get().(*[]byte)
	}
	defer func() {
		for _, e := range envs {
			envPool.Put(e)
		}
	}()

	// cur is the block being sealed; next is read and cut meanwhile.
	cur, err := readBlock(r, block(0), nil, p)
	if err != nil {
		return hash, nil, err
	}
	for which := 0; ; which ^= 1 {
		if err := ctx.Err(); err != nil {
			return hash, nil, err
		}
		out := make([]Ref, len(cur.spans))
		var (
			wg   sync.WaitGroup
			next atomic.Int64
			errs = make([]error, workers)
		)
		for w := range min(workers, len(cur.spans)) {
			wg.Go(func() {
				errs[w] = sealSpans(k, cur, out, prev, &next, envs[w])
			})
		}
		wg.Go(func() { whole.Write(cur.buf[:cur.cut]) })
		var nb cutBlock
		var rerr error
		if !cur.eof {
			nb, rerr = readBlock(r, block(which^1), cur.buf[cur.cut:], p)
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return hash, nil, err
		}
		refs = append(refs, out...)
		if rerr != nil {
			return hash, nil, rerr
		}
		if cur.eof {
			break
		}
		cur = nb
	}
	return whole.Sum256(), refs, nil
}

// sealSpans seals the chunks of b whose indexes it takes from next, into
// out at the same indexes, reusing env as the envelope buffer.
func sealSpans(k chunk.Keys, b cutBlock, out []Ref, prev map[ReuseKey]cid.Cid, next *atomic.Int64, env *[]byte) error {
	for {
		i := int(next.Add(1) - 1)
		if i >= len(b.spans) {
			return nil
		}
		s := b.spans[i]
		data := b.buf[s.off : s.off+s.n]
		id := chunk.PlainID(k, data)
		size := uint32(len(data))
		if c, ok := prev[ReuseKey{id, size}]; ok {
			out[i] = Ref{ID: id, CID: c, Size: size}
			continue
		}
		sealed, err := chunk.AppendSealAs((*env)[:0], k, id, data)
		if err != nil {
			return fmt.Errorf("sealing chunk of %d bytes: %w", len(data), err)
		}
		// *env stays as it is: sealed.Envelope's capacity is clipped to
		// the envelope, and keeping it made every larger chunk after it
		// allocate a new buffer (177 MB for a 256 MiB file's sealing,
		// docs/benchmarks.md, "Plaintext buffers kept per transfer").
		// *env came from envPool with room for any envelope.
		out[i] = Ref{ID: id, CID: sealed.CID, Size: size, Shape: ShapeOf(sealed.Envelope)}
	}
}

// cutBlock is a block of a file cut into chunks: spans lie in buf[:cut];
// buf[cut:n] is the start of the next chunk, carried to the next block.
type cutBlock struct {
	buf   []byte
	spans []span
	cut   int
	eof   bool // the file ends in this block: buf[cut:] is empty
}

type span struct{ off, n int }

// readBlock fills buf with carry and then from r until buf is full or r
// ends, and cuts it as chunk.Chunker would: a cut is made only while at
// least p.Max bytes remain, or at the end of the input (Cut needs p.Max
// bytes of look-ahead to find the same boundary a longer input would).
// buf must be larger than p.Max. A read error is returned wrapped.
func readBlock(r io.Reader, buf, carry []byte, p chunk.Params) (cutBlock, error) {
	n := copy(buf, carry)
	eof := false
	for empty := 0; n < len(buf); {
		m, err := r.Read(buf[n:])
		n += m
		if errors.Is(err, io.EOF) {
			eof = true
			break
		}
		if err != nil {
			return cutBlock{}, fmt.Errorf("reading file to chunk: %w", err)
		}
		if m == 0 {
			if empty++; empty == 100 {
				return cutBlock{}, fmt.Errorf("reading file to chunk: %w", io.ErrNoProgress)
			}
			continue
		}
		empty = 0
	}
	b := cutBlock{buf: buf[:n], eof: eof}
	for pos := 0; pos < n && (n-pos >= p.Max || eof); {
		c := p.Cut(buf[pos:n])
		b.spans = append(b.spans, span{pos, c})
		pos += c
		b.cut = pos
	}
	if eof && b.cut != n {
		panic("node: invariant: a block at the end of its file was not cut to its end")
	}
	// A full buffer that ends the file is found only by the next read.
	return b, nil
}

// IDs remembers the plaintext identity of chunks this device sealed
// (scanning), opened (fetching) or re-created (serving): the identity is
// in a chunk's envelope header, but learning it from the file means
// sealing the chunk. With it,
//
//   - the scan of an edited file (B6: 1 MiB changed in 1 GiB) seals only
//     the chunks the edit changed: the others keep the CID they had
//     (reuseFor);
//   - a chunk re-created from a local file to write another file (B6 on
//     the receiver: every unchanged chunk of the new version) is checked
//     by hashing its plaintext alone, not by sealing it (chunkAtInto);
//   - a served chunk is sealed without hashing its plaintext first (its
//     CID is still checked).
//
// Each identity is stored with its key epoch and is true of the CID it is
// stored under: it was computed from the plaintext that sealed to the CID,
// or read from an envelope that verified against the CID and opened. It
// lives in memory (about 80 bytes a chunk, at most maxChunkIDs), so after
// a start chunks are sealed until seen again.
//
// An IDs is safe for concurrent use; a nil one knows nothing.
type IDs struct {
	mu sync.Mutex // guards m
	m  map[cid.Cid]Known
}

// Known is a chunk's plaintext identity under the keys of Epoch.
// Sealed says this device sealed the chunk from that plaintext (a scan,
// or a re-creation whose CID matched): only then may a scan reuse the CID
// for the same plaintext, since a peer's envelope, though true to its CID,
// need not be the one this device's sealing gives (another compression
// choice, from a member that does not follow the rule).
type Known struct {
	ID     chunk.ID
	Epoch  uint32
	Sealed bool
	Shape  Shape // of the envelope the CID names, when this device sealed it
}

// maxChunkIDs bounds an IDs: about 6 GiB of chunks in about 8 MiB.
const maxChunkIDs = 96 << 10

// NewIDs returns an empty IDs.
func NewIDs() *IDs { return &IDs{m: map[cid.Cid]Known{}} }

// Get returns what c's plaintext identity is, if known.
func (ids *IDs) Get(c cid.Cid) (Known, bool) {
	if ids == nil {
		return Known{}, false
	}
	ids.mu.Lock()
	defer ids.mu.Unlock()
	k, ok := ids.m[c]
	return k, ok
}

// Add records that chunk c holds the plaintext of identity id under
// epoch's keys: c is an envelope of that plaintext, sealed here when
// sealed, whose shape is shape. When full it forgets about a quarter of
// what it holds, chosen by map order.
func (ids *IDs) Add(c cid.Cid, epoch uint32, id chunk.ID, sealed bool, shape Shape) {
	if ids == nil {
		return
	}
	ids.mu.Lock()
	defer ids.mu.Unlock()
	ids.addLocked(c, Known{ID: id, Epoch: epoch, Sealed: sealed, Shape: shape})
}

func (ids *IDs) addLocked(c cid.Cid, k Known) {
	if old, ok := ids.m[c]; ok {
		same := old.Epoch == k.Epoch && old.ID == k.ID
		k.Sealed = k.Sealed || old.Sealed && same
		if !k.Shape.Known && same {
			k.Shape = old.Shape
		}
	} else if len(ids.m) >= maxChunkIDs {
		drop := maxChunkIDs / 4
		for k := range ids.m {
			if drop == 0 {
				break
			}
			delete(ids.m, k)
			drop--
		}
	}
	ids.m[c] = k
}

// AddSealed records a scan's chunks, sealed under epoch's keys.
func (ids *IDs) AddSealed(epoch uint32, refs []Ref) {
	if ids == nil {
		return
	}
	ids.mu.Lock()
	defer ids.mu.Unlock()
	for _, r := range refs {
		ids.addLocked(r.CID, Known{ID: r.ID, Epoch: epoch, Sealed: true, Shape: r.Shape})
	}
}

// ReuseFor is the reuse map File takes for a file whose previous
// content had chunks prev: those this device sealed under epoch's keys,
// by identity and size. Nil when none is known.
func (ids *IDs) ReuseFor(epoch uint32, prev []entry.ChunkRef) map[ReuseKey]cid.Cid {
	if ids == nil || len(prev) == 0 {
		return nil
	}
	ids.mu.Lock()
	defer ids.mu.Unlock()
	var m map[ReuseKey]cid.Cid
	for _, r := range prev {
		if k, ok := ids.m[r.CID]; ok && k.Sealed && k.Epoch == epoch {
			if m == nil {
				m = make(map[ReuseKey]cid.Cid, len(prev))
			}
			m[ReuseKey{k.ID, r.Size}] = r.CID
		}
	}
	return m
}

// Refs is the entry's view of sealed chunks.
func Refs(s []Ref) []entry.ChunkRef {
	refs := make([]entry.ChunkRef, len(s))
	for i, r := range s {
		refs[i] = entry.ChunkRef{CID: r.CID, Size: r.Size}
	}
	return refs
}
