package chunk

import (
	"bytes"
	"slices"
	"testing"
)

// FuzzOpen feeds arbitrary envelopes to Open under the CID they hash to, so
// the fuzzer gets past the CID check. Open must never panic, and whatever
// opens must round-trip: re-sealed, it opens to the same plaintext.
func FuzzOpen(f *testing.F) {
	k := testKeys()
	for _, g := range goldenPlaintexts() {
		s, _ := Seal(k, g.pt)
		f.Add(s.Envelope)
	}
	f.Add([]byte{})
	f.Add(make([]byte, Overhead))
	f.Fuzz(func(t *testing.T, env []byte) {
		pt, err := Open(k, SumCID(env), env)
		if err != nil {
			return
		}
		s, err := Seal(k, pt)
		if err != nil {
			t.Fatalf("opened %d bytes that do not seal: %v", len(pt), err)
		}
		back, err := Open(k, s.CID, s.Envelope)
		if err != nil || !bytes.Equal(back, pt) {
			t.Fatalf("re-sealed plaintext does not round-trip: %v", err)
		}
	})
}

// FuzzChunker checks the cutter on arbitrary input under small bounds:
// Cut agreeing with the plain reference rule, sizes within bounds, and the
// streaming Chunker agreeing with Boundaries.
func FuzzChunker(f *testing.F) {
	f.Add([]byte("hello"))
	f.Add(seeded(1, 20000))
	f.Add(make([]byte, 10000))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := mustParams(64, 128, 512)
		if got, want := p.Cut(data), cutReference(p, data); got != want {
			t.Fatalf("got cut %d, reference says %d", got, want)
		}
		b := p.Boundaries(data)
		prev := 0
		for i, e := range b {
			if n := e - prev; n > p.Max || n <= 0 || (n < p.Min && i != len(b)-1) {
				t.Fatalf("chunk %d: size %d out of bounds", i, n)
			}
			prev = e
		}
		if prev != len(data) {
			t.Fatalf("got last boundary %d, want %d", prev, len(data))
		}
		got, err := collect(t, bytes.NewReader(data), p)
		if err != nil || !slices.Equal(got, b) {
			t.Fatalf("Chunker and Boundaries disagree: %v", err)
		}
	})
}

// FuzzOpenPayload reaches past authentication: it seals arbitrary payloads
// with valid keys (what a malicious vault member could do) and the
// compressed flag set or not, so decompression and the identity check see
// hostile input. Open must never panic, never return more than MaxSize
// bytes, and whatever it returns must hash to the identity in the header.
func FuzzOpenPayload(f *testing.F) {
	k := testKeys()
	f.Add(true, compressible(5000), []byte("id"))
	f.Add(false, []byte("hello"), []byte("hello"))
	f.Add(true, []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38, 0x01, 0x00, 0x00}, []byte(""))
	for _, g := range goldenPlaintexts() {
		payload, compressed := compressOrSkip(g.pt, nil)
		f.Add(compressed, payload, g.pt)
	}
	f.Fuzz(func(t *testing.T, compressed bool, payload, idOf []byte) {
		h := Header{Version: FormatV1, Compressed: compressed, Epoch: k.Epoch, ID: PlainID(k, idOf)}
		c, env := sealRaw(t, k, h, payload)
		pt, err := Open(k, c, env)
		if err != nil {
			return
		}
		if len(pt) > MaxSize || PlainID(k, pt) != h.ID {
			t.Fatalf("opened %d bytes that do not match the header", len(pt))
		}
	})
}
