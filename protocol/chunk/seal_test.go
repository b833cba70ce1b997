package chunk

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/klauspost/compress/zstd"
	mh "github.com/multiformats/go-multihash"
	"github.com/weftsync/weft/protocol/keys"
	"pgregory.net/rapid"
)

// testKeys are fixed keys for tests and golden vectors.
func testKeys() Keys {
	var k Keys
	k.Epoch = 7
	for i := range 32 {
		k.Chunk[i] = byte(i)
		k.ChunkID[i] = byte(0x80 + i)
	}
	return k
}

// compressible is text that zstd shrinks a lot.
func compressible(n int) []byte {
	line := "weft keeps a folder identical on every device, peer to peer.\n"
	return []byte(strings.Repeat(line, n/len(line)+1)[:n])
}

// sealRaw builds an envelope with any header and payload, bypassing Seal's
// rules, encrypted correctly for k: what a malicious vault member could send.
func sealRaw(t testing.TB, k Keys, h Header, payload []byte) (cid.Cid, []byte) {
	t.Helper()
	key, nonce := sealKey(k, h.ID)
	aead, err := newAEAD(key)
	if err != nil {
		t.Fatal(err)
	}
	env := h.appendTo(nil)
	env = aead.Seal(env, nonce[:], payload, env[:HeaderSize:HeaderSize])
	return SumCID(env), env
}

func TestKeysFrom(t *testing.T) {
	ek := keys.RootSecret{1}.Epoch0().Keys(3)
	k := KeysFrom(ek)
	if k.Epoch != 3 || k.Chunk != ek.Chunk || k.ChunkID != ek.ChunkID {
		t.Errorf("got %+v, want the chunk keys of %+v", k, ek)
	}
}

func TestSealRoundTrip(t *testing.T) {
	k := testKeys()
	rapid.Check(t, func(t *rapid.T) {
		var pt []byte
		if rapid.Bool().Draw(t, "compressible") {
			pt = compressible(rapid.IntRange(0, MaxSize).Draw(t, "n"))
		} else {
			pt = rapid.SliceOfN(rapid.Byte(), 0, 10000).Draw(t, "pt")
		}
		s, err := Seal(k, pt)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Envelope) > len(pt)+Overhead {
			t.Fatalf("got envelope of %d bytes for %d, want <= %d", len(s.Envelope), len(pt), len(pt)+Overhead)
		}
		again, _ := Seal(k, pt)
		if !bytes.Equal(again.Envelope, s.Envelope) || again.CID != s.CID {
			t.Fatal("sealing twice gave different envelopes")
		}
		got, err := Open(k, s.CID, s.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, pt) {
			t.Fatalf("got %d bytes back, want %d", len(got), len(pt))
		}
	})
}

func TestCompressionDecision(t *testing.T) {
	k := testKeys()
	half := append(compressible(MaxSize/2), seeded(1, MaxSize/2)...)
	tests := []struct {
		name string
		pt   []byte
		want bool
	}{
		{"empty", nil, false},
		{"short text", []byte("hello, weft\n"), false},
		{"small compressible", compressible(1000), true},
		{"large compressible", compressible(MaxSize), true},
		{"small random", seeded(1, 3000), false},
		{"large random", seeded(2, MaxSize), false},
		// Half text, half random: the sample (two text pieces, two random)
		// says try, and the whole saves enough.
		{"half and half", half, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Seal(k, tt.pt)
			if err != nil {
				t.Fatal(err)
			}
			h, err := ParseHeader(s.Envelope)
			if err != nil {
				t.Fatal(err)
			}
			if h.Compressed != tt.want {
				t.Errorf("got compressed %v, want %v", h.Compressed, tt.want)
			}
		})
	}
}

func TestSealTooLarge(t *testing.T) {
	if _, err := Seal(testKeys(), make([]byte, MaxSize+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("got %v, want ErrTooLarge", err)
	}
}

func TestOpenRejects(t *testing.T) {
	k := testKeys()
	pt := compressible(20000)
	good, err := Seal(k, pt)
	if err != nil {
		t.Fatal(err)
	}
	// mutate returns a modified copy of the good envelope and its CID.
	mutate := func(f func(env []byte) []byte) (cid.Cid, []byte) {
		env := f(append([]byte(nil), good.Envelope...))
		return SumCID(env), env
	}
	hdr := func(f func(h *Header)) Header {
		h := Header{Version: FormatV1, Epoch: k.Epoch, ID: PlainID(k, pt)}
		f(&h)
		return h
	}
	otherEpoch := k
	otherEpoch.Epoch++
	otherKey := k
	otherKey.Chunk[0] ^= 1
	otherIDKey := k
	otherIDKey.ChunkID[0] ^= 1

	// A zstd frame with no content size: magic, descriptor 0 (no FCS, not
	// single segment), window 128 KiB, one last raw block of 1000 bytes.
	noFCS := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38, (1000<<3 | 1) & 0xff, (1000 << 3) >> 8, 0}
	noFCS = append(noFCS, pt[:1000]...)
	bomb := zstd.EncodeTo(nil, make([]byte, 4<<20)) // 4 MiB of zeros, a few hundred bytes

	sha, _ := mh.Sum(good.Envelope, mh.SHA2_256, -1)
	b3, _ := mh.Sum(good.Envelope, mh.BLAKE3, 32)
	tests := []struct {
		name string
		k    Keys
		in   pair
		want error
	}{
		{"CIDv0", k, pair{cid.NewCidV0(sha), good.Envelope}, ErrBadCID},
		{"codec dag-pb", k, pair{cid.NewCidV1(cid.DagProtobuf, b3), good.Envelope}, ErrBadCID},
		{"hash sha2-256", k, pair{cid.NewCidV1(cid.Raw, sha), good.Envelope}, ErrBadCID},
		{"undefined CID", k, pair{cid.Undef, good.Envelope}, ErrBadCID},
		{"CID of other bytes", k, pair{SumCID([]byte("x")), good.Envelope}, ErrCIDMismatch},
		{"flipped byte, old CID", k, pair{good.CID, func() []byte { _, e := mutate(func(e []byte) []byte { e[50] ^= 1; return e }); return e }()}, ErrCIDMismatch},
		{"truncated", k, pair{SumCID(good.Envelope[:Overhead-1]), good.Envelope[:Overhead-1]}, ErrTruncated},
		{"empty", k, pair{SumCID(nil), nil}, ErrTruncated},
		{"too large", k, pair{SumCID(make([]byte, MaxEnvelopeSize+1)), make([]byte, MaxEnvelopeSize+1)}, ErrTooLarge},
		{"version 2", k, pairOf(mutate(func(e []byte) []byte { e[0] = 2; return e })), ErrUnknownFormat},
		{"version 0", k, pairOf(mutate(func(e []byte) []byte { e[0] = 0; return e })), ErrUnknownFormat},
		{"unknown flag", k, pairOf(mutate(func(e []byte) []byte { e[1] |= 0x80; return e })), ErrUnknownFormat},
		{"other epoch", otherEpoch, pair{good.CID, good.Envelope}, ErrWrongEpoch},
		{"other chunk key", otherKey, pair{good.CID, good.Envelope}, ErrDecrypt},
		{"flipped ciphertext", k, pairOf(mutate(func(e []byte) []byte { e[HeaderSize+3] ^= 1; return e })), ErrDecrypt},
		{"flipped tag", k, pairOf(mutate(func(e []byte) []byte { e[len(e)-1] ^= 1; return e })), ErrDecrypt},
		{"flipped compressed flag", k, pairOf(mutate(func(e []byte) []byte { e[1] ^= flagCompressed; return e })), ErrDecrypt},
		{"epoch field rewritten", otherEpoch, pairOf(mutate(func(e []byte) []byte { e[5]++; return e })), ErrDecrypt},
		{"truncated ciphertext", k, pairOf(mutate(func(e []byte) []byte { return e[:len(e)-1] })), ErrDecrypt},
		{"not zstd", k, pairOf(sealRaw(t, k, hdr(func(h *Header) { h.Compressed = true }), pt)), ErrDecompress},
		{"zstd without content size", k, pairOf(sealRaw(t, k, hdr(func(h *Header) { h.Compressed = true }), noFCS)), ErrDecompress},
		{"zstd bomb", k, pairOf(sealRaw(t, k, hdr(func(h *Header) { h.Compressed = true }), bomb)), ErrTooLarge},
		{"other ID key", otherIDKey, pair{good.CID, good.Envelope}, ErrIDMismatch},
		{"ID of other plaintext", k, pairOf(sealRaw(t, k, hdr(func(h *Header) { h.ID = PlainID(k, []byte("other")) }), pt)), ErrIDMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Open(tt.k, tt.in.c, tt.in.env)
			if !errors.Is(err, tt.want) {
				t.Errorf("got error %v, want %v", err, tt.want)
			}
			if got != nil {
				t.Errorf("got %d bytes of plaintext with an error", len(got))
			}
		})
	}
}

// pair is a CID and an envelope handed to Open.
type pair struct {
	c   cid.Cid
	env []byte
}

func pairOf(c cid.Cid, env []byte) pair { return pair{c, env} }

func TestVerifyCID(t *testing.T) {
	data := []byte("some chunk")
	sha, _ := mh.Sum(data, mh.SHA2_256, -1)
	b3, _ := mh.Sum(data, mh.BLAKE3, 32)
	b3long, _ := mh.Sum(data, mh.BLAKE3, 64)
	tests := []struct {
		name string
		c    cid.Cid
		want error
	}{
		{"match", SumCID(data), nil},
		{"go-cid agrees", cid.NewCidV1(cid.Raw, b3), nil},
		{"mismatch", SumCID([]byte("other")), ErrCIDMismatch},
		{"sha2-256", cid.NewCidV1(cid.Raw, sha), ErrBadCID},
		{"64-byte BLAKE3", cid.NewCidV1(cid.Raw, b3long), ErrBadCID},
		{"dag-cbor codec", cid.NewCidV1(cid.DagCBOR, b3), ErrBadCID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := VerifyCID(tt.c, data); !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestAppendSeal(t *testing.T) {
	k := testKeys()
	pt := compressible(30000)
	want, _ := Seal(k, pt)
	prefix := []byte("prefix")
	buf := append(make([]byte, 0, 100), prefix...)
	got, err := AppendSeal(buf, k, pt)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Envelope, want.Envelope) || got.CID != want.CID {
		t.Errorf("got envelope %x, want %x", got.Envelope[:8], want.Envelope[:8])
	}
	if string(buf[:len(prefix)]) != string(prefix) {
		t.Errorf("got prefix %q, want %q", buf[:len(prefix)], prefix)
	}
}

func TestAppendSealAs(t *testing.T) {
	k := testKeys()
	random := make([]byte, 200<<10)
	for i := range random {
		random[i] = byte(i*7919 ^ i>>5)
	}
	tests := []struct {
		name string
		pt   []byte
	}{
		{"empty", nil},
		{"small", []byte("hello")},
		{"random", random},
		{"compressible", compressible(100 << 10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := Seal(k, tt.pt)
			if err != nil {
				t.Fatal(err)
			}
			prefix := []byte("prefix")
			got, err := AppendSealAs(prefix, k, PlainID(k, tt.pt), tt.pt)
			if err != nil {
				t.Fatal(err)
			}
			if !got.CID.Equals(want.CID) || got.ID != want.ID || !bytes.Equal(got.Envelope, want.Envelope) {
				t.Errorf("got CID %v, want %v (envelopes equal: %v)", got.CID, want.CID, bytes.Equal(got.Envelope, want.Envelope))
			}
			wrong := PlainID(k, append([]byte("other"), tt.pt...))
			bad, err := AppendSealAs(nil, k, wrong, tt.pt)
			if err != nil {
				t.Fatal(err)
			}
			if bad.CID.Equals(want.CID) {
				t.Errorf("a wrong identity gave the chunk's CID %v", want.CID)
			}
			if _, err := Open(k, bad.CID, bad.Envelope); !errors.Is(err, ErrIDMismatch) {
				t.Errorf("opening a chunk sealed under a wrong identity: got %v, want ErrIDMismatch", err)
			}
		})
	}
	if _, err := AppendSealAs(nil, k, ID{}, make([]byte, MaxSize+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("got %v, want ErrTooLarge", err)
	}
}

func TestOpenVerifiedInto(t *testing.T) {
	k := testKeys()
	random := make([]byte, 100<<10)
	for i := range random {
		random[i] = byte(i*7919 ^ i>>5)
	}
	for _, pt := range [][]byte{random, compressible(100 << 10), []byte("x")} {
		s, err := Seal(k, pt)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 3, MaxSize)
		got, err := OpenVerifiedInto(buf, k, s.CID, s.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, pt) {
			t.Errorf("got %d bytes, want the %d sealed", len(got), len(pt))
		}
		// Every check after the CID's stays.
		bad := bytes.Clone(s.Envelope)
		bad[len(bad)-1] ^= 1
		if _, err := OpenVerifiedInto(nil, k, s.CID, bad); !errors.Is(err, ErrDecrypt) {
			t.Errorf("altered ciphertext: got %v, want ErrDecrypt", err)
		}
		other := k
		other.Epoch++
		if _, err := OpenVerifiedInto(nil, other, s.CID, s.Envelope); !errors.Is(err, ErrWrongEpoch) {
			t.Errorf("other epoch: got %v, want ErrWrongEpoch", err)
		}
	}
}

// TestAppendEnvelopeAs: re-creating an envelope with the compression
// choice and identity of an earlier sealing gives that envelope exactly,
// and so its tag; a plaintext changed in one byte gives another tag.
func TestAppendEnvelopeAs(t *testing.T) {
	k := testKeys()
	half := append(compressible(MaxSize/2), seeded(1, MaxSize/2)...)
	for _, pt := range [][]byte{nil, []byte("hello, weft\n"), compressible(1000), compressible(MaxSize), seeded(2, MaxSize), half} {
		s, err := Seal(k, pt)
		if err != nil {
			t.Fatal(err)
		}
		h, err := ParseHeader(s.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		prefix := []byte("kept")
		out, err := AppendEnvelopeAs(prefix, k, s.ID, pt, h.Compressed)
		if err != nil {
			t.Fatal(err)
		}
		if string(out[:4]) != "kept" || !bytes.Equal(out[4:], s.Envelope) {
			t.Fatalf("%d bytes, compressed %v: re-created envelope differs from the sealed one", len(pt), h.Compressed)
		}
		want, _ := Tag(s.Envelope)
		if got, ok := Tag(out[4:]); !ok || got != want {
			t.Fatalf("%d bytes: tag %x, want %x", len(pt), got, want)
		}
		if len(pt) == 0 {
			continue
		}
		changed := slices.Clone(pt)
		changed[len(changed)/2] ^= 1
		other, err := AppendEnvelopeAs(nil, k, s.ID, changed, h.Compressed)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := Tag(other); got == want {
			t.Fatalf("%d bytes: a changed plaintext kept the tag", len(pt))
		}
	}
	if _, ok := Tag(make([]byte, Overhead-1)); ok {
		t.Error("a tag from an envelope too short to hold one")
	}
	if _, err := AppendEnvelopeAs(nil, k, ID{}, make([]byte, MaxSize+1), false); !errors.Is(err, ErrTooLarge) {
		t.Errorf("got %v for a plaintext over MaxSize, want ErrTooLarge", err)
	}
}
