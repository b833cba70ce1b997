package vaultdb

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/entry"
)

// Pieces (protocol/entry/piece.go) are kept as files, DIR/pieces/<CID>,
// one per piece, beside the logs rather than in the index: the index is
// derived and may be rebuilt from the logs, which cannot re-create a
// piece, while an entry that names a piece can be reopened only with it.
// A piece is written before the entry that names it (PutPieces returns
// once the pieces are durable), so a crash in between leaves at most an
// unreferenced piece. Pieces are never removed: the log keeps every entry,
// and a version's pieces are what is left of its chunk list. A large
// file's version costs only its new pieces (about 47 KB per 68 MiB of
// file changed).

const piecesDir = "pieces"

// ErrPieceMissing means a piece is not held here.
var ErrPieceMissing = errors.New("piece not held")

// PutPieces stores pieces that are not held yet, and returns once they are
// durable. Each must be a valid piece (entry.SplitChunks made it, or
// entry.DecodePiece accepted it); PutPieces checks each piece's bytes
// against its CID.
func (db *DB) PutPieces(pieces []entry.Piece) error {
	if len(pieces) == 0 {
		return nil
	}
	dir := filepath.Join(db.cfg.Dir, piecesDir)
	if err := db.cfg.FS.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the piece directory: %w", err)
	}
	wrote := false
	for _, p := range pieces {
		if !entry.CIDOf(p.Bytes).Equals(p.CID) {
			return fmt.Errorf("storing piece %s: %w", p.CID, entry.ErrPieceMismatch)
		}
		path := filepath.Join(dir, p.CID.String())
		if f, err := db.cfg.FS.OpenFile(path, os.O_RDONLY, 0); err == nil {
			f.Close()
			continue // held already; a damaged one is found by Piece
		}
		if err := writeDurable(db.cfg.FS, path, p.Bytes); err != nil {
			return fmt.Errorf("storing piece %s: %w", p.CID, err)
		}
		wrote = true
	}
	if wrote {
		if err := syncDir(db.cfg.FS, dir); err != nil {
			return fmt.Errorf("syncing the piece directory: %w", err)
		}
	}
	return nil
}

// Piece returns the chunk references of the piece c, read and checked
// (entry.DecodePiece) from its file. A piece not held is ErrPieceMissing;
// a damaged one is the decoder's error.
func (db *DB) Piece(c cid.Cid) ([]entry.ChunkRef, error) {
	b, err := db.PieceBytes(c)
	if err != nil {
		return nil, err
	}
	return entry.DecodePiece(c, b)
}

// PieceBytes returns the stored bytes of piece c, unchecked (a peer that
// receives them checks them against c).
func (db *DB) PieceBytes(c cid.Cid) ([]byte, error) {
	if !entry.IsPieceCID(c) {
		return nil, fmt.Errorf("piece %s: %w", c, ErrPieceMissing)
	}
	f, err := db.cfg.FS.OpenFile(filepath.Join(db.cfg.Dir, piecesDir, c.String()), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("piece %s: %w", c, ErrPieceMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("reading piece %s: %w", c, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading piece %s: %w", c, err)
	}
	if st.Size() > entry.MaxPieceSize {
		return nil, fmt.Errorf("reading piece %s: %d bytes, limit %d: %w", c, st.Size(), entry.MaxPieceSize, entry.ErrFieldTooLarge)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading piece %s: %w", c, err)
	}
	return b, nil
}

// writeDurable writes b to path through a temporary file, synced, then
// renamed into place, so path never holds part of b.
func writeDurable(fsys FS, path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		fsys.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		fsys.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		fsys.Remove(tmp)
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		fsys.Remove(tmp)
		return err
	}
	return nil
}

// SetAsidePiece renames a damaged piece's file to <CID>.damaged (kept for
// inspection; a later one replaces it), so that PutPieces stores a good
// copy in its place.
func (db *DB) SetAsidePiece(c cid.Cid) error {
	path := filepath.Join(db.cfg.Dir, piecesDir, c.String())
	if err := db.cfg.FS.Rename(path, path+".damaged"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("setting piece %s aside: %w", c, err)
	}
	return nil
}
