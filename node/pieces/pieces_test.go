package pieces

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// fakeStore is a piece store in memory; damaged pieces fail their check.
type fakeStore struct {
	pieces  map[cid.Cid][]entry.ChunkRef
	damaged map[cid.Cid]bool
	aside   []cid.Cid
}

func newStore() *fakeStore {
	return &fakeStore{pieces: map[cid.Cid][]entry.ChunkRef{}, damaged: map[cid.Cid]bool{}}
}

func (s *fakeStore) Piece(c cid.Cid) ([]entry.ChunkRef, error) {
	if s.damaged[c] {
		return nil, errors.New("piece fails its check")
	}
	refs, ok := s.pieces[c]
	if !ok {
		return nil, fmt.Errorf("piece %s: %w", c, vaultdb.ErrPieceMissing)
	}
	return refs, nil
}

func (s *fakeStore) SetAsidePiece(c cid.Cid) error {
	delete(s.damaged, c)
	delete(s.pieces, c)
	s.aside = append(s.aside, c)
	return nil
}

func (s *fakeStore) PutPieces(ps []entry.Piece) error {
	for _, p := range ps {
		refs, err := entry.DecodePiece(p.CID, p.Bytes)
		if err != nil {
			return err
		}
		s.pieces[p.CID] = refs
	}
	return nil
}

// split is a version of n chunks and the same version as an entry lists
// it, in pieces (small pieces, so that there are several).
func split(t *testing.T, n int) (whole, listed entry.Version, ps []entry.Piece) {
	t.Helper()
	whole = entry.Version{Path: "big.bin", Kind: entry.KindFile}
	for i := range n {
		b := fmt.Appendf(nil, "chunk %d", i)
		whole.Chunks = append(whole.Chunks, entry.ChunkRef{CID: chunk.SumCID(b), Size: uint32(len(b))})
		whole.Size += uint64(len(b))
	}
	out, ps := entry.SplitBody(&entry.Body{Versions: []entry.Version{whole}}, entry.PieceParams{Direct: 8, Min: 4, Max: 16, Mask: 3})
	if out == nil || len(ps) < 2 {
		t.Fatalf("split %d chunks into %d pieces", n, len(ps))
	}
	return whole, out.Versions[0], ps
}

func fetcherOf(ps []entry.Piece, asked *[]cid.Cid) Fetcher {
	return func(cids []cid.Cid) (map[cid.Cid][]byte, error) {
		*asked = append(*asked, cids...)
		got := map[cid.Cid][]byte{}
		for _, p := range ps {
			if slices.ContainsFunc(cids, p.CID.Equals) {
				got[p.CID] = p.Bytes
			}
		}
		return got, nil
	}
}

// Expand fetches the pieces the store lacks (each once), stores them,
// and gives the whole list; with nothing to fetch from it refuses; a
// damaged stored piece is set aside and fetched again.
func TestExpand(t *testing.T) {
	whole, listed, ps := split(t, 100)
	s := newStore()
	var writes []error
	p := New(s, nil, func(_ string, err error) { writes = append(writes, err) })
	body := &entry.Body{Versions: []entry.Version{listed, listed}} // the same pieces twice
	if _, err := p.Expand(body, nil); !errors.Is(err, vaultdb.ErrPieceMissing) {
		t.Fatalf("expanding with no fetcher: %v, want ErrPieceMissing", err)
	}
	var asked []cid.Cid
	out, err := p.Expand(body, fetcherOf(ps, &asked))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Versions[0].Chunks, whole.Chunks) || !slices.Equal(out.Versions[1].Chunks, whole.Chunks) {
		t.Fatal("the expanded list is not the version's")
	}
	if len(asked) != len(ps) || len(s.pieces) != len(ps) || len(writes) != 1 {
		t.Fatalf("asked %d, stored %d, writes %d; want each of %d pieces once and one write", len(asked), len(s.pieces), len(writes), len(ps))
	}
	// Stored now: no fetch needed.
	if _, err := p.Expand(body, nil); err != nil {
		t.Fatalf("expanding from the store: %v", err)
	}
	s.damaged[ps[0].CID] = true
	asked = nil
	if _, err := p.Expand(body, fetcherOf(ps, &asked)); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || !asked[0].Equals(ps[0].CID) || len(s.aside) != 1 {
		t.Fatalf("a damaged piece: asked %v, set aside %v; want it alone, both", asked, s.aside)
	}
}

// ExpandStored keeps a version whose pieces are missing with its piece
// references (and sets a damaged one aside); Repair then fetches them and
// gives the whole list.
func TestExpandStoredThenRepair(t *testing.T) {
	whole, listed, ps := split(t, 60)
	s := newStore()
	if err := s.PutPieces(ps); err != nil {
		t.Fatal(err)
	}
	p := New(s, nil, nil)
	body := &entry.Body{Versions: []entry.Version{listed}}
	if got := p.ExpandStored(body); !slices.Equal(got.Versions[0].Chunks, whole.Chunks) {
		t.Fatal("a stored version was not expanded")
	}
	delete(s.pieces, ps[1].CID)
	s.damaged[ps[0].CID] = true
	got := p.ExpandStored(body).Versions[0]
	if !got.HasPieces() || len(s.aside) != 1 || !s.aside[0].Equals(ps[0].CID) {
		t.Fatalf("missing and damaged pieces: kept pieced %v, set aside %v", got.HasPieces(), s.aside)
	}
	fetch := func(_ context.Context, cids []cid.Cid, got func(cid.Cid, []byte) error) error {
		for _, piece := range ps {
			if slices.ContainsFunc(cids, piece.CID.Equals) {
				if err := got(piece.CID, piece.Bytes); err != nil {
					return err
				}
			}
		}
		return nil
	}
	full, fetched, err := p.Repair(context.Background(), got, fetch)
	if err != nil || fetched != 2 || !slices.Equal(full.Chunks, whole.Chunks) {
		t.Fatalf("repair: fetched %d, whole %v, err %v", fetched, slices.Equal(full.Chunks, whole.Chunks), err)
	}
	none := func(context.Context, []cid.Cid, func(cid.Cid, []byte) error) error {
		return errors.New("no member connected")
	}
	delete(s.pieces, ps[2].CID)
	if _, _, err := p.Repair(context.Background(), got, none); !errors.Is(err, vaultdb.ErrPieceMissing) {
		t.Fatalf("repair with nobody to ask: %v, want ErrPieceMissing", err)
	}
}

func TestDedup(t *testing.T) {
	a, b := chunk.SumCID([]byte("a")), chunk.SumCID([]byte("b"))
	if got := Dedup([]cid.Cid{a, b, a, a, b}); len(got) != 2 || !got[0].Equals(a) || !got[1].Equals(b) {
		t.Fatalf("Dedup: %v", got)
	}
}
