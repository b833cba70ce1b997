package entry

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ipfs/go-cid"
)

// chain builds n consecutive entries of f.id.
func chain(t testing.TB, f fixture, n int) []*Entry {
	t.Helper()
	var (
		es   []*Entry
		head Head
	)
	for i := 0; i < n; i++ {
		e := mustNew(t, f.config(head), sampleBody(f.other.ID()))
		es = append(es, e)
		head = e.Head()
	}
	return es
}

// wireOf returns a copy of e's wire form for forging variants.
func wireOf(t testing.TB, e *Entry) wireEntry {
	t.Helper()
	var w wireEntry
	if err := unmarshal(e.Bytes(), &w); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestValidateAccepts(t *testing.T) {
	f := newFixture(t)
	es := chain(t, f, 3)
	head := Head{}
	for i, e := range es {
		got, err := Validate(e.Bytes(), f.vault, head)
		if err != nil {
			t.Fatalf("entry %d: got %v, want nil", i+1, err)
		}
		if !got.CID().Equals(e.CID()) {
			t.Fatalf("entry %d: got CID %s, want %s", i+1, got.CID(), e.CID())
		}
		head = got.Head()
	}
	if es[0].Prev().Defined() {
		t.Errorf("seq 1: got prev %s, want undefined", es[0].Prev())
	}
	if !es[1].Prev().Equals(es[0].CID()) {
		t.Errorf("seq 2: got prev %s, want %s", es[1].Prev(), es[0].CID())
	}
}

func TestValidateRejects(t *testing.T) {
	f := newFixture(t)
	es := chain(t, f, 2)
	e1, e2 := es[0], es[1]
	h1 := e1.Head()
	other, self := f.other.ID(), f.id.ID()

	with := func(e *Entry, mut func(w *wireEntry)) []byte {
		w := wireOf(t, e)
		mut(&w)
		return forge(f.id, w)
	}
	headers := func(n, refs, sup int) []wireHeader {
		hs := make([]wireHeader, n)
		for i := range hs {
			for j := 0; j < refs; j++ {
				hs[i].Refs = append(hs[i].Refs, chunkCID("x").Bytes())
			}
			for j := 0; j < sup; j++ {
				hs[i].Supersedes = append(hs[i].Supersedes, wireVersionID{Author: other[:], Seq: uint64(j + 1)})
			}
		}
		return hs
	}
	badSig := bytes.Clone(e2.Bytes())
	badSig[len(badSig)-1] ^= 0x01
	nonCanonical := append(append(bytes.Clone(e1.Bytes()[:70]), 0x18), e1.Bytes()[70:]...) // seq 1 as 0x18 0x01
	deep := append([]byte{0x8b, 0x01}, bytes.Repeat([]byte{0x81}, 10)...)
	deep = append(deep, 0x00)
	otherAuthor := forge(f.other, wireOf(t, e1))

	tests := []struct {
		name string
		data []byte
		head Head
		want error
	}{
		{"bad signature", badSig, h1, ErrBadSignature},
		{"signature by another key", func() []byte {
			b := bytes.Clone(otherAuthor)
			id := f.id.ID()
			copy(b[38:70], id[:]) // claim f.id as author
			return b
		}(), Head{}, ErrBadSignature},
		{"another vault", with(e1, func(w *wireEntry) { w.Vault[0] ^= 1 }), Head{}, ErrWrongVault},
		{"sequence gap from nothing", e2.Bytes(), Head{}, ErrSeqGap},
		{"sequence gap", with(e2, func(w *wireEntry) { w.Seq = 3 }), h1, ErrSeqGap},
		{"sequence replay", e1.Bytes(), e2.Head(), ErrSeqReplay},
		{"sequence regress same seq other entry", with(e2, func(w *wireEntry) { w.Time++ }), e2.Head(), ErrSeqReplay},
		{"duplicate of head", e2.Bytes(), e2.Head(), ErrDuplicate},
		{"previous-hash mismatch", with(e2, func(w *wireEntry) { w.Prev = CIDOf([]byte("x")).Bytes() }), h1, ErrPrevMismatch},
		{"clock equal", with(e2, func(w *wireEntry) { w.Clock = h1.Clock }), h1, ErrClockNotIncreasing},
		{"clock behind", with(e2, func(w *wireEntry) { w.Clock = 0 }), h1, ErrClockNotIncreasing},
		{"unknown format version", with(e1, func(w *wireEntry) { w.Format = 4 }), Head{}, ErrUnknownFormat},
		{"format 2 without a piece", with(e1, func(w *wireEntry) { w.Format = FormatV2 }), Head{}, ErrMalformed},
		{"unknown format layout", append([]byte{0x98, 0x20, 0x01}, make([]byte, 40)...), Head{}, ErrUnknownFormat},
		{"entry too large", make([]byte, MaxEntrySize+1), Head{}, ErrEntryTooLarge},
		{"too many versions", with(e1, func(w *wireEntry) { w.Headers = headers(MaxVersions+1, 0, 0) }), Head{}, ErrTooManyVersions},
		{"too many refs", with(e1, func(w *wireEntry) { w.Headers = headers(2, MaxRefs/2+1, 0) }), Head{}, ErrTooManyRefs},
		{"too many supersedes", with(e2, func(w *wireEntry) { w.Headers = headers(1, 0, MaxSupersedes+1) }), h1, ErrTooManySupersedes},
		{"body too large", with(e1, func(w *wireEntry) { w.Body = make([]byte, MaxBodySize+1) }), Head{}, ErrBodyTooLarge},
		{"array over decoder limit", with(e1, func(w *wireEntry) { w.Headers = headers(1, MaxRefs+1, 0) }), Head{}, ErrFieldTooLarge},
		{"nesting over decoder limit", deep, Head{}, ErrFieldTooLarge},
		{"non-canonical integer", nonCanonical, Head{}, ErrNonCanonical},
		{"non-canonical byte string length", func() []byte {
			b := bytes.Clone(e1.Bytes())
			return append(append(b[:2:2], 0x59, 0x00), b[3:]...) // vault length 32 in two bytes
		}(), Head{}, ErrNonCanonical},
		{"vault of 31 bytes", func() []byte {
			b := bytes.Clone(e1.Bytes())
			out := append(b[:2:2], 0x58, 0x1f) // a 31-byte vault
			out = append(out, b[4:4+31]...)
			return append(out, b[4+32:]...)
		}(), Head{}, ErrMalformed},
		{"signature of 63 bytes", func() []byte {
			b := bytes.Clone(e1.Bytes())
			b[len(b)-65] = 0x3f
			return b[:len(b)-1]
		}(), Head{}, ErrMalformed},
		{"version ID author of 31 bytes", with(e2, func(w *wireEntry) {
			w.Headers[0].Supersedes = []wireVersionID{{Author: other[:31], Seq: 1}}
		}), h1, ErrMalformed},
		{"empty input", nil, Head{}, ErrMalformed},
		{"not an array", []byte{0xa0}, Head{}, ErrMalformed},
		{"truncated", e1.Bytes()[:len(e1.Bytes())-1], Head{}, ErrMalformed},
		{"trailing byte", append(bytes.Clone(e1.Bytes()), 0), Head{}, ErrMalformed},
		{"wrong element count", append([]byte{0x8a}, e1.Bytes()[1:len(e1.Bytes())-66]...), Head{}, ErrMalformed},
		{"sequence zero", with(e1, func(w *wireEntry) { w.Seq = 0 }), Head{}, ErrMalformed},
		{"seq 1 with prev", with(e1, func(w *wireEntry) { w.Prev = e2.CID().Bytes() }), Head{}, ErrMalformed},
		{"seq 2 without prev", with(e2, func(w *wireEntry) { w.Prev = nil }), h1, ErrMalformed},
		{"prev of chunk kind", with(e2, func(w *wireEntry) { w.Prev = chunkCID("p").Bytes() }), h1, ErrMalformed},
		{"ref of entry kind", with(e1, func(w *wireEntry) { w.Headers[1].Refs[0] = e1.CID().Bytes() }), Head{}, ErrMalformed},
		{"ref not a CID", with(e1, func(w *wireEntry) { w.Headers[1].Refs[0] = []byte("nope") }), Head{}, ErrMalformed},
		{"supersedes unsorted", with(e2, func(w *wireEntry) {
			w.Headers[0].Supersedes = []wireVersionID{{Author: other[:], Seq: 2}, {Author: other[:], Seq: 1}}
		}), h1, ErrMalformed},
		{"supersedes own later version", with(e2, func(w *wireEntry) {
			w.Headers[0].Supersedes = []wireVersionID{{Author: self[:], Seq: 2}}
		}), h1, ErrMalformed},
		{"body shorter than nonce and tag", with(e1, func(w *wireEntry) { w.Body = make([]byte, 39) }), Head{}, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Validate(tt.data, f.vault, tt.head)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got error %v, want %v", err, tt.want)
			}
			chainErr := false
			for _, c := range []error{ErrDuplicate, ErrSeqReplay, ErrSeqGap, ErrPrevMismatch, ErrClockNotIncreasing} {
				chainErr = chainErr || errors.Is(err, c)
			}
			if chainErr != (got != nil) {
				t.Errorf("got entry %v with error %v, want an entry exactly for chain errors", got != nil, err)
			}
		})
	}
}

func TestSizeErrorsWrapTooLarge(t *testing.T) {
	for _, err := range []error{ErrEntryTooLarge, ErrBodyTooLarge, ErrTooManyVersions, ErrTooManyRefs, ErrTooManySupersedes, ErrFieldTooLarge} {
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("got errors.Is(%v, ErrTooLarge) false, want true", err)
		}
	}
}

func TestNewRejects(t *testing.T) {
	f := newFixture(t)
	e1 := mustNew(t, f.config(Head{}), sampleBody(f.other.ID()))
	tests := []struct {
		name string
		cfg  func(c *Config)
		body *Body
		want error
	}{
		{"clock not above previous", func(c *Config) { c.Clock = e1.Clock() }, sampleBody(f.other.ID()), ErrClockNotIncreasing},
		{"bad path", nil, &Body{Versions: []Version{inlineFile("../x", "")}}, ErrBadPath},
		{"bad version", nil, &Body{Versions: []Version{{Path: "d", Kind: KindDir, Size: 1}}}, ErrBadVersion},
		{"too many versions", nil, &Body{Versions: make([]Version, MaxVersions+1)}, ErrTooManyVersions},
		{"prev head without CID", func(c *Config) { c.Prev.CID = cid.Undef }, sampleBody(f.other.ID()), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := f.config(e1.Head())
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			_, err := New(cfg, tt.body)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got error %v, want %v", err, tt.want)
			}
		})
	}
}
