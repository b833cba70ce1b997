package vaultdb

import (
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// testPieces cuts a list of real chunk CIDs into several pieces.
func testPieces(t *testing.T) ([]entry.ChunkRef, []entry.Piece) {
	t.Helper()
	refs := make([]entry.ChunkRef, 40)
	for i := range refs {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		refs[i] = entry.ChunkRef{CID: chunk.SumCID(b), Size: uint32(1000 + i)}
	}
	_, ps := entry.SplitChunks(refs, entry.PieceParams{Direct: 4, Min: 2, Max: 8, Mask: 3})
	if len(ps) < 3 {
		t.Fatalf("%d pieces", len(ps))
	}
	return refs, ps
}

// TestPiecesSurviveReopenAndRebuild: stored pieces read back after a
// reopen and after the index is deleted and rebuilt, since an entry that
// names them cannot be reopened without them; a damaged piece reads as an
// error, not as other references; a bad piece is refused.
func TestPiecesSurviveReopenAndRebuild(t *testing.T) {
	dir := t.TempDir()
	var vault keys.VaultID
	db, _, err := Open(dir, vault)
	if err != nil {
		t.Fatal(err)
	}
	refs, ps := testPieces(t)
	if _, err := db.Piece(ps[0].CID); !errors.Is(err, ErrPieceMissing) {
		t.Fatalf("before: %v, want ErrPieceMissing", err)
	}
	if err := db.PutPieces(ps); err != nil {
		t.Fatal(err)
	}
	if err := db.PutPieces(ps); err != nil { // held already: no-op
		t.Fatal(err)
	}
	bad := ps[1]
	bad.Bytes = ps[2].Bytes
	if err := db.PutPieces([]entry.Piece{bad}); !errors.Is(err, entry.ErrPieceMismatch) {
		t.Fatalf("mismatched piece: %v", err)
	}
	db.Close()
	if err := os.RemoveAll(filepath.Join(dir, "index")); err != nil {
		t.Fatal(err)
	}
	db, _, err = Open(dir, vault)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var got []entry.ChunkRef
	for _, p := range ps {
		r, err := db.Piece(p.CID)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r...)
	}
	if !slices.Equal(got, refs) {
		t.Fatal("pieces read back differ")
	}
	path := filepath.Join(dir, piecesDir, ps[0].CID.String())
	b, _ := os.ReadFile(path)
	b[len(b)-1] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Piece(ps[0].CID); !errors.Is(err, entry.ErrPieceMismatch) {
		t.Fatalf("damaged piece: %v, want ErrPieceMismatch", err)
	}
}
