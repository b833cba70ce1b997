package chunk

import (
	"testing"

	"lukechampine.com/blake3"
	"lukechampine.com/blake3/guts"
)

// TestBlake3Sum256 checks the single-goroutine tree hash against
// lukechampine.com/blake3 on every length class: empty, within a block,
// within a chunk, around batch and tree boundaries.
func TestBlake3Sum256(t *testing.T) {
	data := seeded(5, 300<<10)
	key := testKeys().ChunkID
	kw := keyWords(&key)
	var lengths []int
	for _, base := range []int{0, 64, 1024, batch, 2 * batch, 3 * batch, 4 * batch, 7 * batch, 8 * batch, 16 * batch, 17 * batch} {
		for _, d := range []int{-1025, -1024, -1, 0, 1, 63, 64, 1023, 1024, 1025, 5000} {
			if n := base + d; n >= 0 && n <= len(data) {
				lengths = append(lengths, n)
			}
		}
	}
	for n := 0; n < 3*batch; n += 97 {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		if got, want := blake3Sum256(data[:n], &guts.IV, 0), blake3.Sum256(data[:n]); got != want {
			t.Fatalf("length %d: got %x, want %x", n, got, want)
		}
		h := blake3.New(32, key[:])
		h.Write(data[:n])
		var want [32]byte
		h.Sum(want[:0])
		if got := blake3Sum256(data[:n], &kw, guts.FlagKeyedHash); got != want {
			t.Fatalf("keyed, length %d: got %x, want %x", n, got, want)
		}
	}
}

// TestSealKey checks the one-block derivation against the library's keyed
// hash with 56 bytes of output.
func TestSealKey(t *testing.T) {
	k := testKeys()
	id := PlainID(k, []byte("x"))
	h := blake3.New(56, k.Chunk[:])
	h.Write([]byte(sealContext))
	h.Write(id[:])
	want := h.Sum(nil)
	key, nonce := sealKey(k, id)
	if got := append(key[:], nonce[:]...); string(got) != string(want) {
		t.Errorf("got %x, want %x", got, want)
	}
}

// TestHasherStreams: the streaming Hasher gives lukechampine.com/blake3's
// hash for every length class and however the input is split into
// writes (one byte, odd sizes, batch-sized, one write), and Sum256 does not
// disturb a stream that goes on.
func TestHasherStreams(t *testing.T) {
	data := seeded(9, 20*batch+777)
	splits := []int{1, 7, 1000, batch - 1, batch, batch + 1, 3*batch + 5, len(data)}
	for _, n := range []int{0, 1, 1024, batch - 1, batch, batch + 1, 2 * batch, 2*batch + 1, 16 * batch, 17*batch + 3, len(data)} {
		want := blake3.Sum256(data[:n])
		for _, step := range splits {
			h := NewHasher()
			for off := 0; off < n; off += step {
				h.Write(data[off:min(off+step, n)])
				if off == n/2/step*step { // a Sum in the middle changes nothing
					_ = h.Sum256()
				}
			}
			if got := h.Sum256(); got != want {
				t.Fatalf("length %d in writes of %d: got %x, want %x", n, step, got, want)
			}
		}
	}
}

// BenchmarkHasher is whole-file hashing in 128 KiB writes, against the
// library's Hasher doing the same.
func BenchmarkHasher(b *testing.B) {
	src := seeded(1, 64<<20)
	b.Run("weft", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			h := NewHasher()
			for off := 0; off < len(src); off += 128 << 10 {
				h.Write(src[off : off+128<<10])
			}
			h.Sum256()
		}
	})
	b.Run("lukechampine", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			h := blake3.New(32, nil)
			for off := 0; off < len(src); off += 128 << 10 {
				h.Write(src[off : off+128<<10])
			}
			h.Sum(nil)
		}
	})
}
