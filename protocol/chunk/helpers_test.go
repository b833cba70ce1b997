package chunk

import (
	"math/rand/v2"

	"lukechampine.com/blake3"
)

// seeded returns n pseudo-random bytes from ChaCha8 keyed by seed. ChaCha8's
// output is specified, so the bytes are the same on every Go version.
func seeded(seed uint64, n int) []byte {
	var key [32]byte
	for i := range 8 {
		key[i] = byte(seed >> (8 * i))
	}
	b := make([]byte, n)
	rand.NewChaCha8(key).Read(b)
	return b
}

// chunkSet returns the BLAKE3 hashes of the chunks of data under p.
func chunkSet(p Params, data []byte) map[[32]byte]bool {
	set := make(map[[32]byte]bool)
	prev := 0
	for _, b := range p.Boundaries(data) {
		set[blake3.Sum256(data[prev:b])] = true
		prev = b
	}
	return set
}

// newChunks reports how many chunks of edited, and how many bytes in them,
// are absent from old: what a peer holding old must be sent.
func newChunks(p Params, old map[[32]byte]bool, edited []byte) (chunks, bytes int) {
	prev := 0
	for _, b := range p.Boundaries(edited) {
		if !old[blake3.Sum256(edited[prev:b])] {
			chunks++
			bytes += b - prev
		}
		prev = b
	}
	return chunks, bytes
}

// overwrite returns a copy of data with n bytes at off replaced by fresh
// random bytes from seed.
func overwrite(data []byte, off, n int, seed uint64) []byte {
	out := append([]byte(nil), data...)
	copy(out[off:off+n], seeded(seed, n))
	return out
}

// insert returns a copy of data with n fresh random bytes from seed
// inserted at off.
func insert(data []byte, off, n int, seed uint64) []byte {
	out := make([]byte, 0, len(data)+n)
	out = append(out, data[:off]...)
	out = append(out, seeded(seed, n)...)
	return append(out, data[off:]...)
}
