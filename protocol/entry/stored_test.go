package entry

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"

	"github.com/weftsync/weft/protocol/keys"
)

// resign replaces raw's signature with id's signature over raw as it is, so
// tests can make a non-canonical encoding that its author signed.
func resign(id *keys.Identity, raw []byte) []byte {
	out := bytes.Clone(raw)
	copy(out[len(out)-sigSize:], id.Sign(signingInput(out)))
	return out
}

// headIs returns a head lookup that answers h for every author.
func headIs(h Head) func(keys.DeviceID) Head { return func(keys.DeviceID) Head { return h } }

// TestValidateStoredMatchesValidate: on everything except a non-canonical
// encoding, ValidateStored gives Validate's answer: the same error class,
// an entry exactly when Validate returns one, the same CID. ChainStored
// gives the same answer but for a bad signature, which it does not check.
func TestValidateStoredMatchesValidate(t *testing.T) {
	f := newFixture(t)
	es := chain(t, f, 2)
	e1, e2 := es[0], es[1]
	h1 := e1.Head()
	with := func(e *Entry, mut func(w *wireEntry)) []byte {
		w := wireOf(t, e)
		mut(&w)
		return forge(f.id, w)
	}
	flip := func(b []byte, i int) []byte {
		b = bytes.Clone(b)
		b[i] ^= 0x01
		return b
	}
	tests := []struct {
		name string
		data []byte
		head Head
		want error // nil: accepted
	}{
		{"first entry", e1.Bytes(), Head{}, nil},
		{"second entry", e2.Bytes(), h1, nil},
		{"signature byte flipped", flip(e2.Bytes(), len(e2.Bytes())-1), h1, ErrBadSignature},
		{"sealed body byte flipped", flip(e1.Bytes(), len(e1.Bytes())-sigSize-2-5), Head{}, ErrBadSignature},
		{"time changed, old signature", func() []byte {
			w := wireOf(t, e1)
			w.Time++
			return marshal(&w) // keeps e1's signature
		}(), Head{}, ErrBadSignature},
		{"signed by another key", func() []byte {
			b := forge(f.other, wireOf(t, e1))
			id := f.id.ID()
			copy(b[38:70], id[:])
			return b
		}(), Head{}, ErrBadSignature},
		{"another vault", with(e1, func(w *wireEntry) { w.Vault[0] ^= 1 }), Head{}, ErrWrongVault},
		{"duplicate of head", e2.Bytes(), e2.Head(), ErrDuplicate},
		{"replay", e1.Bytes(), e2.Head(), ErrSeqReplay},
		{"gap", e2.Bytes(), Head{}, ErrSeqGap},
		{"previous-hash mismatch", with(e2, func(w *wireEntry) { w.Prev = CIDOf([]byte("x")).Bytes() }), h1, ErrPrevMismatch},
		{"clock behind", with(e2, func(w *wireEntry) { w.Clock = 0 }), h1, ErrClockNotIncreasing},
		{"unknown format", with(e1, func(w *wireEntry) { w.Format = 4 }), Head{}, ErrUnknownFormat},
		{"entry too large", make([]byte, MaxEntrySize+1), Head{}, ErrEntryTooLarge},
		{"too many versions", with(e1, func(w *wireEntry) {
			w.Headers = make([]wireHeader, MaxVersions+1)
		}), Head{}, ErrTooManyVersions},
		{"sequence zero", with(e1, func(w *wireEntry) { w.Seq = 0 }), Head{}, ErrMalformed},
		{"truncated", e1.Bytes()[:len(e1.Bytes())-1], Head{}, ErrMalformed},
		{"trailing byte", append(bytes.Clone(e1.Bytes()), 0), Head{}, ErrMalformed},
		{"empty", nil, Head{}, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, wantErr := Validate(tt.data, f.vault, tt.head)
			if !errors.Is(wantErr, tt.want) || (tt.want == nil) != (wantErr == nil) {
				t.Fatalf("Validate: got error %v, want %v (the table is wrong)", wantErr, tt.want)
			}
			got, err := ValidateStored(tt.data, f.vault, headIs(tt.head))
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("ValidateStored: got error %v, want %v", err, tt.want)
			}
			if (got != nil) != (want != nil) {
				t.Fatalf("ValidateStored: got entry %v, Validate's %v", got != nil, want != nil)
			}
			if got != nil && !got.CID().Equals(want.CID()) {
				t.Errorf("ValidateStored: got CID %s, want %s", got.CID(), want.CID())
			}
			// ChainStored differs only in the signature: it takes what
			// fails nothing else, and gives the same answer otherwise.
			wantChain := tt.want
			if errors.Is(tt.want, ErrBadSignature) {
				wantChain = nil
			}
			c, cerr := ChainStored(tt.data, f.vault, headIs(tt.head))
			if !errors.Is(cerr, wantChain) || (wantChain == nil) != (cerr == nil) {
				t.Fatalf("ChainStored: got error %v, want %v", cerr, wantChain)
			}
			if wantChain == nil && (c == nil || !bytes.Equal(c.Bytes(), tt.data)) {
				t.Fatalf("ChainStored: got entry %v, want the input's", c)
			}
			if got != nil && !c.CID().Equals(got.CID()) {
				t.Errorf("ChainStored: got CID %s, ValidateStored's %s", c.CID(), got.CID())
			}
			d, derr := DecodeStored(tt.data)
			if _, verr := Decode(tt.data); (derr == nil) != (verr == nil) {
				t.Errorf("DecodeStored: got error %v, Decode's %v", derr, verr)
			}
			if d != nil && !bytes.Equal(d.Bytes(), tt.data) {
				t.Errorf("DecodeStored: got bytes %x, want the input", d.Bytes())
			}
		})
	}
}

// TestStoredSkipsOnlyCanonicalForm pins what DecodeStored and
// ValidateStored do not recheck: an entry whose author signed a
// non-canonical encoding. Decode and Validate reject it; the stored
// variants accept it, under another CID than the canonical entry's. The
// log never accepts such bytes (Append runs Validate), so reading them
// back would take someone holding the author's key writing the file.
func TestStoredSkipsOnlyCanonicalForm(t *testing.T) {
	f := newFixture(t)
	e1 := chain(t, f, 1)[0]
	b := e1.Bytes()
	nonCanonical := resign(f.id, append(append(bytes.Clone(b[:70]), 0x18), b[70:]...)) // seq 1 as 0x18 0x01

	if _, err := Decode(nonCanonical); !errors.Is(err, ErrNonCanonical) {
		t.Fatalf("Decode: got %v, want %v", err, ErrNonCanonical)
	}
	if _, err := Validate(nonCanonical, f.vault, Head{}); !errors.Is(err, ErrNonCanonical) {
		t.Fatalf("Validate: got %v, want %v", err, ErrNonCanonical)
	}
	d, err := DecodeStored(nonCanonical)
	if err != nil {
		t.Fatalf("DecodeStored: got %v, want nil", err)
	}
	if d.Seq() != 1 || d.CID().Equals(e1.CID()) {
		t.Errorf("DecodeStored: got seq %d CID %s, want seq 1 and a CID other than %s", d.Seq(), d.CID(), e1.CID())
	}
	if _, err := ValidateStored(nonCanonical, f.vault, headIs(Head{})); err != nil {
		t.Errorf("ValidateStored: got %v, want nil (the signature binds these bytes)", err)
	}
	// Unsigned, the same non-canonical bytes are still rejected.
	unsigned := append(append(bytes.Clone(b[:70]), 0x18), b[70:]...)
	if _, err := ValidateStored(unsigned, f.vault, headIs(Head{})); !errors.Is(err, ErrBadSignature) {
		t.Errorf("ValidateStored of unsigned non-canonical bytes: got %v, want %v", err, ErrBadSignature)
	}
}

// TestValidateStoredAsksHeadOfAuthor: the head lookup is asked once, for
// the entry's author.
func TestValidateStoredAsksHeadOfAuthor(t *testing.T) {
	f := newFixture(t)
	es := chain(t, f, 2)
	var asked []keys.DeviceID
	head := func(a keys.DeviceID) Head {
		asked = append(asked, a)
		return es[0].Head()
	}
	if _, err := ValidateStored(es[1].Bytes(), f.vault, head); err != nil {
		t.Fatalf("got %v, want nil", err)
	}
	if len(asked) != 1 || asked[0] != f.id.ID() {
		t.Errorf("got head asked for %v, want once for %s", asked, f.id.ID().Short())
	}
}

// FuzzDecodeStored: DecodeStored never panics, accepts everything Decode
// accepts with the same CID, and rejects only what Decode rejects.
// TestPrepareStoredSharesInput: PrepareStored keeps its input as the
// entry's bytes and its sealed body (no copy), Decode and DecodeStored a
// copy of theirs; all three read the same entry.
func TestPrepareStoredSharesInput(t *testing.T) {
	f := newFixture(t)
	e := mustNew(t, f.config(Head{}), sampleBody(f.other.ID()))
	data := bytes.Clone(e.Bytes())
	p, err := PrepareStored(data, f.vault, true)
	if err != nil {
		t.Fatalf("PrepareStored: got %v, want nil", err)
	}
	if !inside(p.Bytes(), data) || !inside(p.SealedBody(), data) {
		t.Errorf("PrepareStored copied its input")
	}
	for name, decode := range map[string]func([]byte) (*Entry, error){"Decode": Decode, "DecodeStored": DecodeStored} {
		d, err := decode(data)
		if err != nil {
			t.Fatalf("%s: got %v, want nil", name, err)
		}
		if inside(d.Bytes(), data) || inside(d.SealedBody(), data) {
			t.Errorf("%s kept its input, want a copy", name)
		}
		if !d.CID().Equals(p.CID()) || !bytes.Equal(d.SealedBody(), p.SealedBody()) {
			t.Errorf("%s: got CID %s, PrepareStored's %s", name, d.CID(), p.CID())
		}
	}
	if !bytes.Equal(p.SealedBody(), e.SealedBody()) {
		t.Errorf("sealed body differs from the entry's")
	}
}

// inside reports whether b lies in buf's memory.
func inside(b, buf []byte) bool {
	if len(b) == 0 || len(buf) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(&buf[0]))
	p := uintptr(unsafe.Pointer(&b[0]))
	return p >= start && p < start+uintptr(len(buf))
}

func FuzzDecodeStored(f *testing.F) {
	fx := newFixture(f)
	e1 := mustNew(f, fx.config(Head{}), sampleBody(fx.other.ID()))
	e2 := mustNew(f, fx.config(e1.Head()), &Body{})
	f.Add(e1.Bytes())
	f.Add(e2.Bytes())
	f.Add(append(append(bytes.Clone(e1.Bytes()[:70]), 0x18), e1.Bytes()[70:]...))
	f.Add([]byte{})
	f.Add([]byte{0x8b, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, serr := DecodeStored(data)
		d, derr := Decode(data)
		if derr == nil {
			if serr != nil {
				t.Fatalf("Decode accepts, DecodeStored: %v", serr)
			}
			if !s.CID().Equals(d.CID()) {
				t.Fatalf("got CID %s, Decode's %s", s.CID(), d.CID())
			}
		}
		if serr != nil && derr == nil {
			t.Fatalf("DecodeStored rejects what Decode accepts: %v", serr)
		}
		if serr == nil && derr != nil && !errors.Is(derr, ErrNonCanonical) {
			t.Fatalf("DecodeStored accepts, Decode: %v, want only ErrNonCanonical", derr)
		}
		_, _ = ValidateStored(data, fx.vault, headIs(Head{}))
	})
}

// TestOpenStoredBodyRoundTrip: a stored entry's body opens to the same
// versions as with OpenBody.
func TestOpenStoredBodyRoundTrip(t *testing.T) {
	f := newFixture(t)
	e := mustNew(t, f.config(Head{}), sampleBody(f.other.ID()))
	d, err := DecodeStored(e.Bytes())
	if err != nil {
		t.Fatalf("DecodeStored: got %v, want nil", err)
	}
	got, err := OpenStoredBody(d, f.ek)
	if err != nil {
		t.Fatalf("OpenStoredBody: got %v, want nil", err)
	}
	want, err := OpenBody(e, f.ek)
	if err != nil {
		t.Fatalf("OpenBody: got %v, want nil", err)
	}
	if !bytes.Equal(encodeBody(got), encodeBody(want)) {
		t.Errorf("got body %x, want %x", encodeBody(got), encodeBody(want))
	}
}
