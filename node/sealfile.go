package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ipfs/go-cid"
	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
)

// A scan seals every chunk of a large file to learn its CID (the CID hashes
// the envelope). Cutting is sequential (a boundary depends on the one
// before), but each chunk's identity, compression probe, encryption and CID
// depend on that chunk alone, and the whole-file hash only on the order of
// the bytes. So sealFile reads the file a block at a time, cuts the block
// on its own goroutine, and hands the block's chunks to a pool of workers
// while a further goroutine feeds the block to the whole-file hash; the
// next block is read and cut meanwhile. Results go back in chunk order, so
// the chunk list is exactly a sequential scan's.

// sealBlockSize is how many bytes of a file one round of the pipeline
// holds: about 32 average chunks, enough to keep every worker busy while
// the next block is read. Two blocks are in flight, plus one envelope
// buffer per worker, so a scan of any size holds about 5 MiB.
const sealBlockSize = 2 << 20

// blockPool and envPool recycle the pipeline's buffers across files, so a
// scan of many large files (B5) does not allocate and zero 5 MiB per file.
var (
	blockPool = sync.Pool{New: func() any { b := make([]byte, sealBlockSize); return &b }}
	envPool   = sync.Pool{New: func() any { b := make([]byte, 0, chunk.MaxEnvelopeSize); return &b }}
)

// sealedRef is one chunk as a scan sealed it: its plaintext identity beside
// its CID and size.
type sealedRef struct {
	ID   chunk.ID
	CID  cid.Cid
	Size uint32
}

// reuseKey finds an earlier sealing of a chunk by plaintext identity and
// size. Within one epoch's keys sealing is deterministic, so a chunk with
// the identity and size of one sealed before has that one's CID: the scan
// of an edited file seals only the chunks the edit changed.
type reuseKey struct {
	id   chunk.ID
	size uint32
}

// sealFile cuts the content of r into chunks under the format's params,
// seals each under k to learn its CID, and hashes the whole content with
// BLAKE3-256. Chunks whose identity and size are in prev take the CID
// recorded there instead of being sealed again (prev must hold only what
// sealing under these same k gave). It runs up to workers goroutines
// sealing (GOMAXPROCS when workers <= 0) and one hashing, all started and
// waited for here. It returns the chunks in order, or the first error: a
// read error (wrapped), or ctx.Err() once ctx is done. The result is
// exactly what chunk.NewChunker and chunk.Seal give one chunk after
// another (TestSealFileMatchesSequential).
func sealFile(ctx context.Context, k chunk.Keys, r io.Reader, prev map[reuseKey]cid.Cid, workers int) (hash [32]byte, refs []sealedRef, err error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := chunk.DefaultParams()
	whole := blake3.New(32, nil)
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
		out := make([]sealedRef, len(cur.spans))
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
	whole.Sum(hash[:0])
	return hash, refs, nil
}

// sealSpans seals the chunks of b whose indexes it takes from next, into
// out at the same indexes, reusing env as the envelope buffer.
func sealSpans(k chunk.Keys, b cutBlock, out []sealedRef, prev map[reuseKey]cid.Cid, next *atomic.Int64, env *[]byte) error {
	for {
		i := int(next.Add(1) - 1)
		if i >= len(b.spans) {
			return nil
		}
		s := b.spans[i]
		data := b.buf[s.off : s.off+s.n]
		id := chunk.PlainID(k, data)
		size := uint32(len(data))
		if c, ok := prev[reuseKey{id, size}]; ok {
			out[i] = sealedRef{ID: id, CID: c, Size: size}
			continue
		}
		sealed, err := chunk.AppendSealAs((*env)[:0], k, id, data)
		if err != nil {
			return fmt.Errorf("sealing chunk of %d bytes: %w", len(data), err)
		}
		*env = sealed.Envelope[:0]
		out[i] = sealedRef{ID: id, CID: sealed.CID, Size: size}
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

// sealedCache remembers, for the large files a scan sealed, each chunk's
// plaintext identity beside its CID, so the next scan of an edited file
// (B6: 1 MiB changed in 1 GiB) seals only the chunks the edit changed:
// hashing the plaintext is a third of sealing. It is a hint: an entry is
// used only under the keys it was sealed with, and what it maps to is
// what sealing would give. It lives in memory (about 56 bytes a chunk,
// at most maxCachedChunks), so the first scan after a start seals
// everything, as before.
//
// A sealedCache is safe for concurrent use.
type sealedCache struct {
	mu sync.Mutex // guards the fields below
	// byPath holds each file's last sealing; order is the paths in the
	// order they were kept, oldest first, for eviction.
	byPath map[string]sealedList
	order  []string
	total  int
}

// sealedList is one file's chunks as last sealed, and the keys they were
// sealed under.
type sealedList struct {
	keys chunk.Keys
	refs []sealedRef
}

// maxCachedChunks bounds the chunks a sealedCache holds: about 6 GiB of
// file content in about 5 MiB of memory.
const maxCachedChunks = 96 << 10

// minCachedChunks: files of fewer chunks are not kept; re-sealing them
// costs little, and a folder of many small files would fill the cache.
const minCachedChunks = 16

func newSealedCache() *sealedCache { return &sealedCache{byPath: map[string]sealedList{}} }

// reuse returns what sealing path's last content under k gave, by
// identity and size, or nil.
func (c *sealedCache) reuse(path string, k chunk.Keys) map[reuseKey]cid.Cid {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	l, ok := c.byPath[path]
	c.mu.Unlock()
	if !ok || l.keys != k {
		return nil
	}
	m := make(map[reuseKey]cid.Cid, len(l.refs))
	for _, r := range l.refs {
		m[reuseKey{r.ID, r.Size}] = r.CID
	}
	return m
}

// keep records refs as path's chunks sealed under k, evicting the oldest
// files beyond maxCachedChunks. Files under minCachedChunks, or alone over
// the bound, are not kept (and any earlier list of path is dropped).
func (c *sealedCache) keep(path string, k chunk.Keys, refs []sealedRef) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(path)
	if len(refs) < minCachedChunks || len(refs) > maxCachedChunks {
		return
	}
	for c.total+len(refs) > maxCachedChunks && len(c.order) > 0 {
		c.dropLocked(c.order[0])
	}
	c.byPath[path] = sealedList{keys: k, refs: refs}
	c.order = append(c.order, path)
	c.total += len(refs)
}

// dropLocked forgets path. c.mu must be held.
func (c *sealedCache) dropLocked(path string) {
	l, ok := c.byPath[path]
	if !ok {
		return
	}
	delete(c.byPath, path)
	c.total -= len(l.refs)
	for i, p := range c.order {
		if p == path {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
}

// chunkRefs is the entry's view of sealed chunks.
func chunkRefs(s []sealedRef) []entry.ChunkRef {
	refs := make([]entry.ChunkRef, len(s))
	for i, r := range s {
		refs[i] = entry.ChunkRef{CID: r.CID, Size: r.Size}
	}
	return refs
}
