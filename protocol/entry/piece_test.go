package entry

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/ipfs/go-cid"
	"lukechampine.com/blake3"
)

// fileRefs returns n chunk references named by prefix and index, each of
// 64 KiB: a stand-in for a large file's chunk list.
func fileRefs(prefix string, n int) []ChunkRef {
	refs := make([]ChunkRef, n)
	for i := range refs {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(i))
		refs[i] = ChunkRef{CID: chunkCID(prefix + string(b[:])), Size: 64 << 10}
	}
	return refs
}

// pieceStore decodes pieces it was given, as a device's or relay's store would.
type pieceStore map[cid.Cid][]byte

func (s pieceStore) add(ps []Piece) {
	for _, p := range ps {
		s[p.CID] = p.Bytes
	}
}

func (s pieceStore) get(c cid.Cid) ([]ChunkRef, error) {
	b, ok := s[c]
	if !ok {
		return nil, errors.New("piece not held")
	}
	return DecodePiece(c, b)
}

func bigVersion(refs []ChunkRef) Version {
	var size uint64
	for _, r := range refs {
		size += uint64(r.Size)
	}
	return Version{Path: "big.bin", Kind: KindFile, Mode: 0o644, MTime: 1, Size: size, Hash: blake3.Sum256([]byte("big")), Chunks: refs}
}

// TestPiecesRoundTrip: a long chunk list is cut into pieces within the
// limits, the entry carrying them is format 2 and far smaller than the list,
// and a receiver that holds the pieces gets the whole list back.
func TestPiecesRoundTrip(t *testing.T) {
	f := newFixture(t)
	refs := fileRefs("f", 20_000) // about 1.2 GiB of 64 KiB chunks
	p := DefaultPieceParams()
	listed, pieces := SplitChunks(refs, p)
	if len(pieces) < 5 || len(listed) != len(pieces) {
		t.Fatalf("%d pieces, %d listed, want several and equal", len(pieces), len(listed))
	}
	total := 0
	for i, pc := range pieces {
		if len(pc.Refs) > p.Max || (i < len(pieces)-1 && len(pc.Refs) < p.Min) {
			t.Errorf("piece %d has %d refs, want %d..%d", i, len(pc.Refs), p.Min, p.Max)
		}
		if len(pc.Bytes) > MaxPieceSize {
			t.Errorf("piece %d is %d bytes, over %d", i, len(pc.Bytes), MaxPieceSize)
		}
		if !IsPieceCID(pc.CID) || IsPieceCID(pc.Refs[0].CID) {
			t.Errorf("piece %d: CID kinds wrong", i)
		}
		total += len(pc.Refs)
	}
	if total != len(refs) {
		t.Fatalf("pieces hold %d refs, want %d", total, len(refs))
	}
	v := bigVersion(refs)
	v.Chunks = listed
	e := mustNew(t, f.config(Head{}), &Body{Versions: []Version{v}})
	if e.Format() != FormatV2 {
		t.Errorf("format %d, want %d", e.Format(), FormatV2)
	}
	if len(e.Bytes()) > 64<<10 {
		t.Errorf("entry of %d bytes for a list of %d chunks, want it small", len(e.Bytes()), len(refs))
	}
	got, err := Validate(e.Bytes(), f.vault, Head{})
	if err != nil {
		t.Fatal(err)
	}
	body, err := OpenBody(got, f.ek)
	if err != nil {
		t.Fatal(err)
	}
	store := pieceStore{}
	store.add(pieces)
	full, err := ExpandPieces(body.Versions[0], store.get)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(full.Chunks, refs) {
		t.Fatal("expanded list differs from the original")
	}
	// Without its pieces the version does not expand.
	if _, err := ExpandPieces(body.Versions[0], pieceStore{}.get); err == nil {
		t.Fatal("expanded without the pieces")
	}
}

// TestShortListStaysDirect: a list within Direct is listed as it is, and
// its entry stays format 1 (golden vectors of such entries are unchanged).
func TestShortListStaysDirect(t *testing.T) {
	refs := fileRefs("s", DefaultPieceParams().Direct)
	listed, pieces := SplitChunks(refs, DefaultPieceParams())
	if pieces != nil || !slices.Equal(listed, refs) {
		t.Fatal("a short list was cut into pieces")
	}
	f := newFixture(t)
	if e := mustNew(t, f.config(Head{}), sampleBody(f.other.ID())); e.Format() != FormatV1 {
		t.Fatalf("format %d, want 1", e.Format())
	}
}

// TestPieceEditLocality: replacing a few chunks in the middle, inserting
// some, or deleting some changes at most three pieces of a long list, so a
// new version of a large file costs only the pieces around its edit.
func TestPieceEditLocality(t *testing.T) {
	p := DefaultPieceParams()
	refs := fileRefs("e", 65_536) // a 4 GiB file
	_, before := SplitChunks(refs, p)
	held := map[cid.Cid]bool{}
	for _, pc := range before {
		held[pc.CID] = true
	}
	mid := len(refs) / 2
	edits := map[string][]ChunkRef{
		"overwrite": slices.Concat(refs[:mid], fileRefs("new", 17), refs[mid+17:]),
		"insert":    slices.Concat(refs[:mid], fileRefs("ins", 17), refs[mid:]),
		"delete":    slices.Concat(refs[:mid], refs[mid+17:]),
	}
	for name, after := range edits {
		_, ps := SplitChunks(after, p)
		changed := 0
		for _, pc := range ps {
			if !held[pc.CID] {
				changed++
			}
		}
		if changed < 1 || changed > 3 {
			t.Errorf("%s: %d of %d pieces new, want 1..3", name, changed, len(ps))
		}
	}
}

// TestDecodePieceRejects: every rule DecodePiece states has a case.
func TestDecodePieceRejects(t *testing.T) {
	_, pieces := SplitChunks(fileRefs("r", 3000), DefaultPieceParams())
	good := pieces[0]
	reenc := func(w wirePiece) ([]byte, cid.Cid) {
		b := marshal(&w)
		return b, CIDOf(b)
	}
	one := []wireChunkRef{{CID: chunkCID("x").Bytes(), Size: 5}}
	cases := []struct {
		name string
		c    cid.Cid
		data []byte
		want error
	}{
		{"chunk CID", chunkCID("x"), good.Bytes, ErrMalformed},
		{"other bytes", good.CID, pieces[1].Bytes, ErrPieceMismatch},
		{"too large", CIDOf(make([]byte, MaxPieceSize+1)), make([]byte, MaxPieceSize+1), ErrFieldTooLarge},
		{"not CBOR", CIDOf([]byte{0xff}), []byte{0xff}, ErrMalformed},
	}
	add := func(name string, w wirePiece, want error) {
		b, c := reenc(w)
		cases = append(cases, struct {
			name string
			c    cid.Cid
			data []byte
			want error
		}{name, c, b, want})
	}
	add("format 2", wirePiece{Format: 2, Refs: one}, ErrUnknownFormat)
	add("no refs", wirePiece{Format: 1}, ErrMalformed)
	add("size 0", wirePiece{Format: 1, Refs: []wireChunkRef{{CID: chunkCID("x").Bytes()}}}, ErrMalformed)
	add("a piece in a piece", wirePiece{Format: 1, Refs: []wireChunkRef{{CID: good.CID.Bytes(), Size: 5}}}, ErrMalformed)
	add("too many refs", wirePiece{Format: 1, Refs: slices.Repeat(one, MaxPieceRefs+1)}, ErrMalformed)
	nc := append([]byte{0x82, 0x18, 0x01}, marshal(&one)...) // format 1 in two bytes
	cases = append(cases, struct {
		name string
		c    cid.Cid
		data []byte
		want error
	}{"non-canonical", CIDOf(nc), nc, ErrNonCanonical})
	for _, tc := range cases {
		if _, err := DecodePiece(tc.c, tc.data); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	if refs, err := DecodePiece(good.CID, good.Bytes); err != nil || !slices.Equal(refs, good.Refs) {
		t.Fatalf("good piece: %v", err)
	}
}

// TestPiecedVersionRules: a body may not mix pieces and chunks, piece
// sizes must add up to the file's, a format 1 entry cannot carry a piece,
// and a piece that lies about its size does not expand.
func TestPiecedVersionRules(t *testing.T) {
	f := newFixture(t)
	refs := fileRefs("v", 3000)
	listed, pieces := SplitChunks(refs, DefaultPieceParams())
	mixed := bigVersion(refs)
	mixed.Chunks = append(slices.Clone(listed), refs[0])
	if _, err := New(f.config(Head{}), &Body{Versions: []Version{mixed}}); !errors.Is(err, ErrMalformed) {
		t.Errorf("mixed list: got %v, want ErrMalformed", err)
	}
	short := bigVersion(refs)
	short.Chunks = slices.Clone(listed)
	short.Size--
	if _, err := New(f.config(Head{}), &Body{Versions: []Version{short}}); !errors.Is(err, ErrBadVersion) {
		t.Errorf("sizes: got %v, want ErrBadVersion", err)
	}
	// A format 1 entry whose header names a piece.
	good := bigVersion(refs)
	good.Chunks = listed
	e := mustNew(t, f.config(Head{}), &Body{Versions: []Version{good}})
	w := wireOf(t, e)
	w.Format = FormatV1
	if _, err := Validate(forge(f.id, w), f.vault, Head{}); !errors.Is(err, ErrMalformed) {
		t.Errorf("piece in format 1: got %v, want ErrMalformed", err)
	}
	// A piece reference claiming more bytes than its piece holds.
	store := pieceStore{}
	store.add(pieces)
	lie := good
	lie.Chunks = slices.Clone(listed)
	lie.Chunks[0].Size++
	lie.Chunks[1].Size--
	if _, err := ExpandPieces(lie, store.get); !errors.Is(err, ErrPieceMismatch) {
		t.Errorf("lying size: got %v, want ErrPieceMismatch", err)
	}
}

// TestPieceGolden pins the cut rule and the piece encoding: devices that
// cut the same list differently would share no pieces, so a change here is
// a format change (docs/protocol/entries.md, "Pieces").
func TestPieceGolden(t *testing.T) {
	listed, pieces := SplitChunks(fileRefs("golden", 5000), DefaultPieceParams())
	want := []struct {
		refs, bytes int
		cid         string
		size        uint32
	}{
		{358, 15757, "bafyr4igfqmb72amspic6voxnlb55tkxv5ye4vt5cq6347ybodxpb5gj4wu", 23461888},
		{1558, 68557, "bafyr4ia4ixzuhu32nsezkewa4gao26poovwwzsxhmpnybumstd6bks3mcu", 102105088},
		{1033, 45457, "bafyr4ibt6qiu7wxy5b7h3guendhaz7wwq4cqjlte2u6p243kcqxtnpyoqy", 67698688},
		{514, 22621, "bafyr4ia5cfb5fxhc3earcdwjogwy7qodykfep45weohd7gygjlhancr5bm", 33685504},
		{1023, 45017, "bafyr4ibwsqdm3tzk2vom7rxrcm6jgneeh7rwsrq57afnrxlzoqnmwsakni", 67043328},
		{514, 22621, "bafyr4igec4oz4onwrdpclw6mwmnesoukviejjserfdiyghpmmxa5jdl7aa", 33685504},
	}
	if len(pieces) != len(want) {
		t.Fatalf("%d pieces, want %d", len(pieces), len(want))
	}
	for i, w := range want {
		p := pieces[i]
		if len(p.Refs) != w.refs || len(p.Bytes) != w.bytes || p.CID.String() != w.cid || listed[i].Size != w.size {
			t.Errorf("piece %d: %d refs, %d bytes, %s, size %d; want %+v", i, len(p.Refs), len(p.Bytes), p.CID, listed[i].Size, w)
		}
	}
}

// TestSplitBody: only the versions whose lists are long are cut; the body
// given keeps its whole lists (the author folds those in), and a body with
// nothing to cut is returned as it is.
func TestSplitBody(t *testing.T) {
	small := bigVersion(fileRefs("s", 3))
	small.Path = "small.bin"
	big := bigVersion(fileRefs("b", 20_000))
	b := &Body{Versions: []Version{small, big}}
	out, pieces := SplitBody(b, DefaultPieceParams())
	if len(pieces) == 0 || !out.HasPieces() || out.Versions[0].HasPieces() || !out.Versions[1].HasPieces() {
		t.Fatalf("%d pieces; cut: small %v, big %v; want the big list alone cut", len(pieces), out.Versions[0].HasPieces(), out.Versions[1].HasPieces())
	}
	if b.HasPieces() || len(b.Versions[1].Chunks) != 20_000 {
		t.Fatal("the body given was changed")
	}
	only := &Body{Versions: []Version{small}}
	if got, ps := SplitBody(only, DefaultPieceParams()); got != only || ps != nil {
		t.Fatal("a body with nothing to cut was copied or cut")
	}
}
