package entry

import (
	"sync"

	"lukechampine.com/blake3"
	"lukechampine.com/blake3/guts"
)

// groupSize is what guts.CompressBuffer hashes at once: 16 chunks, one per
// SIMD lane.
const groupSize = guts.MaxSIMD * guts.ChunkSize

// groupPool holds buffers for the last, partial group of an input.
var groupPool = sync.Pool{New: func() any { return new([groupSize]byte) }}

// sum256 returns the BLAKE3-256 hash of b. It equals blake3.Sum256 (a test
// pins that) but suits entry-sized inputs better: the library's Sum256 copies
// a 16 KiB hasher, compresses chunk groups in goroutines and pays more in
// that overhead than in hashing below about 64 KiB, while this feeds whole
// 16-chunk groups straight to the library's SIMD compressor (AVX-512/AVX2)
// in sequence and merges their chaining values with the usual BLAKE3 stack.
func sum256(b []byte) [32]byte {
	if len(b) <= guts.ChunkSize {
		return blake3.Sum256(b)
	}
	var (
		stack  [54][8]uint32 // one entry per level; 2^54 groups is beyond any input
		depth  int
		groups uint64
	)
	// Compress every full group that is not the last: only the last one's
	// root may carry the root flag.
	for len(b) > groupSize {
		cv := guts.ChainingValue(guts.CompressBuffer((*[groupSize]byte)(b[:groupSize]), groupSize, &guts.IV, groups*guts.MaxSIMD, 0))
		b = b[groupSize:]
		groups++
		for t := groups; t&1 == 0; t >>= 1 {
			depth--
			cv = guts.ChainingValue(guts.ParentNode(stack[depth], cv, &guts.IV, 0))
		}
		stack[depth] = cv
		depth++
	}
	buf := groupPool.Get().(*[groupSize]byte)
	copy(buf[:], b)
	n := guts.CompressBuffer(buf, len(b), &guts.IV, groups*guts.MaxSIMD, 0)
	groupPool.Put(buf)
	for depth > 0 {
		depth--
		n = guts.ParentNode(stack[depth], guts.ChainingValue(n), &guts.IV, 0)
	}
	n.Flags |= guts.FlagRoot
	full := guts.WordsToBytes(guts.CompressNode(n))
	var out [32]byte
	copy(out[:], full[:32])
	return out
}
