package entry

import (
	"bytes"
	"testing"
)

// FuzzDecodeEntry: Decode and Validate never panic, whatever decodes
// re-encodes to exactly the input, and still does after the caller
// overwrote its input (Decode keeps a copy: the sealed body, which the
// decoders take as a slice of their input, too).
func FuzzDecodeEntry(f *testing.F) {
	fx := newFixture(f)
	e1 := mustNew(f, fx.config(Head{}), sampleBody(fx.other.ID()))
	e2 := mustNew(f, fx.config(e1.Head()), &Body{})
	f.Add(e1.Bytes())
	f.Add(e2.Bytes())
	f.Add([]byte{})
	f.Add([]byte{0x8b, 0x01})
	f.Add(append([]byte{0x8b, 0x01}, bytes.Repeat([]byte{0x81}, 10)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Decode(data)
		if err != nil {
			return
		}
		if !bytes.Equal(e.Bytes(), data) {
			t.Fatalf("decoded entry re-encodes to %x, input %x", e.Bytes(), data)
		}
		if !bytes.Equal(marshal(&e.w), data) {
			t.Fatalf("wire form re-encodes differently")
		}
		in := bytes.Clone(data)
		for i := range data {
			data[i] ^= 0xff
		}
		if !bytes.Equal(e.Bytes(), in) || !bytes.Equal(marshal(&e.w), in) {
			t.Fatalf("the decoded entry changed with its input")
		}
		copy(data, in)
		_, _ = Validate(data, fx.vault, Head{})
		_, _ = OpenBody(e, fx.ek)
	})
}

// FuzzOpenBody: body plaintexts (sealed under the fixture's key) and raw
// sealed bytes never panic; whatever decodes re-encodes to the same bytes,
// and a valid body survives a full New/OpenBody round trip.
func FuzzOpenBody(f *testing.F) {
	fx := newFixture(f)
	f.Add(encodeBody(sampleBody(fx.other.ID())))
	f.Add(encodeBody(&Body{}))
	f.Add([]byte{0x81, 0x80})
	f.Add(sealFor(fx, encodeBody(sampleBody(fx.other.ID())), 1))
	named := sampleBody(fx.other.ID())
	named.Author = "Zoë's phone"
	f.Add(encodeBody(named))
	f.Add([]byte{0x82, 0x80, 0x60}) // a format-3 body with an empty name
	ad := bodyAD(fx.vault, fx.id.ID(), 1, 0)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = open(data, &fx.ek.Body, ad) // random ciphertexts: must only fail
		sealed := sealFor(fx, data, 1)
		plain, err := open(sealed, &fx.ek.Body, ad)
		if err != nil || !bytes.Equal(plain, data) {
			t.Fatalf("seal/open round trip: %v", err)
		}
		b, err := decodeBody(plain)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeBody(b), data) {
			t.Fatalf("decoded body re-encodes differently")
		}
		if b.validate(fx.id.ID(), 1) != nil {
			return
		}
		e, err := New(fx.config(Head{}), b)
		if err != nil {
			if len(data) < MaxBodySize/2 {
				t.Fatalf("New rejected a valid body: %v", err)
			}
			return
		}
		got, err := OpenBody(e, fx.ek)
		if err != nil {
			t.Fatalf("OpenBody of a valid body: %v", err)
		}
		if !bytes.Equal(encodeBody(got), data) {
			t.Fatalf("opened body re-encodes differently")
		}
	})
}

// FuzzDecodePiece: DecodePiece never panics, and a piece it accepts
// re-encodes to the same bytes (one form per piece) and holds only chunk
// references.
func FuzzDecodePiece(f *testing.F) {
	_, pieces := SplitChunks(fileRefs("z", 1500), PieceParams{Direct: 8, Min: 4, Max: 64, Mask: 7})
	for _, p := range pieces[:3] {
		f.Add(p.Bytes)
	}
	f.Add([]byte{0x82, 0x01, 0x80})
	f.Add([]byte{0x82, 0x02, 0x81, 0x82, 0x41, 0x00, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		refs, err := DecodePiece(CIDOf(data), data)
		if err != nil {
			return
		}
		again := encodePiece(refs)
		if string(again.Bytes) != string(data) {
			t.Fatalf("accepted piece re-encodes differently")
		}
		for _, r := range refs {
			if IsPieceCID(r.CID) || r.Size == 0 {
				t.Fatalf("accepted a bad reference %v", r)
			}
		}
	})
}
