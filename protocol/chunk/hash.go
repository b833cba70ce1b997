package chunk

import (
	"encoding/binary"

	"lukechampine.com/blake3/guts"
)

// batch is how many bytes one SIMD pass of the BLAKE3 compression takes:
// 16 chunks of 1 KiB with AVX-512.
const batch = guts.MaxSIMD * guts.ChunkSize

// blake3Sum256 returns the 32-byte BLAKE3 hash of data, keyed when key is
// not nil (then flags must be guts.FlagKeyedHash). It computes exactly what
// lukechampine.com/blake3 does (a test checks every length class), but on
// the calling goroutine without allocating: that package's Hasher fans
// each Write out to goroutines and allocates per call, which for
// chunk-sized inputs at GOMAXPROCS=1 costs more than the hashing.
//
// The tree is built as BLAKE3 specifies: whole 16-chunk batches are
// aligned subtrees of height 4, merged on a stack as they complete; the
// final 1..16 chunks form one left-balanced subtree that is folded into the
// stack from the bottom, and that last parent (or the lone chunk) is the
// root.
func blake3Sum256(data []byte, key *[8]uint32, flags uint32) (out [32]byte) {
	var stack [64 - 4][8]uint32
	var batches uint64 // completed batches; bit i set = stack[i] holds a subtree of 2^i batches
	for len(data) > batch {
		n := guts.CompressBuffer((*[batch]byte)(data[:batch]), batch, key, batches*guts.MaxSIMD, flags)
		cv := guts.ChainingValue(n)
		i := 0
		for ; batches&(1<<i) != 0; i++ {
			cv = guts.ChainingValue(guts.ParentNode(stack[i], cv, key, flags))
		}
		stack[i] = cv
		batches++
		data = data[batch:]
	}
	var tail [batch]byte
	copy(tail[:], data)
	n := guts.CompressBuffer(&tail, len(data), key, batches*guts.MaxSIMD, flags)
	for i := 0; batches>>i != 0; i++ {
		if batches&(1<<i) != 0 {
			n = guts.ParentNode(stack[i], guts.ChainingValue(n), key, flags)
		}
	}
	n.Flags |= guts.FlagRoot
	words := guts.CompressNode(n)
	for i := range 8 {
		binary.LittleEndian.PutUint32(out[i*4:], words[i])
	}
	return out
}

// keyWords converts a 32-byte BLAKE3 key to the words guts takes.
func keyWords(k *[32]byte) (w [8]uint32) {
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(k[i*4:])
	}
	return w
}
