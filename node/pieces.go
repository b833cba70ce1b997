package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/vaultdb"
)

// Chunk-list pieces on a device (protocol/entry/piece.go).
//
// In memory and in the index a version always holds its whole chunk list;
// pieces exist only in entries, in the vault's piece store
// (store/vaultdb/pieces.go) and on the wire. An author cuts a large
// file's list into pieces just before signing the entry and stores them
// durably before the entry; a receiver fetches the pieces it lacks from
// the peer that sent the entry (over the chunk protocol, where a device
// serves them from its piece store) and stores them before the entry, so
// every entry in the log can be reopened, served and re-sent with its
// pieces. A new version of a large file therefore costs the pieces around
// its edit, not the whole list.

// pieceFetcher fetches pieces by CID and returns their bytes, each checked
// against its CID.
type pieceFetcher func(cids []cid.Cid) (map[cid.Cid][]byte, error)

// errPieceUnavailable means the sender of an entry did not have a piece
// the entry names.
var errPieceUnavailable = errors.New("chunk-list piece unavailable from the sender")

// pieceParams is how this device cuts chunk lists.
func (v *vault) pieceParams() entry.PieceParams {
	if p := v.n.cfg.Pieces; p.Direct > 0 {
		return p
	}
	return entry.DefaultPieceParams()
}

// splitBody returns the body to sign (each long chunk list replaced by
// its pieces) and the pieces to store. b itself is not changed: it keeps
// the whole lists, which the device folds into its graph.
func splitBody(b *entry.Body, p entry.PieceParams) (*entry.Body, []entry.Piece) {
	var (
		out    *entry.Body
		pieces []entry.Piece
	)
	for i := range b.Versions {
		listed, ps := entry.SplitChunks(b.Versions[i].Chunks, p)
		if ps == nil {
			continue
		}
		if out == nil {
			out = &entry.Body{Versions: append([]entry.Version(nil), b.Versions...)}
		}
		out.Versions[i].Chunks = listed
		pieces = append(pieces, ps...)
	}
	if out == nil {
		return b, nil
	}
	return out, pieces
}

// expandBody returns b with every version's pieces expanded into its
// chunk list. Pieces not in the piece store are fetched with fetch (nil:
// none may be fetched, as when reopening the log) and stored first.
func (v *vault) expandBody(b *entry.Body, fetch pieceFetcher) (*entry.Body, error) {
	var want []cid.Cid
	for i := range b.Versions {
		for _, c := range entry.PieceCIDs(&b.Versions[i]) {
			if _, err := v.db.PieceBytes(c); errors.Is(err, vaultdb.ErrPieceMissing) {
				want = append(want, c)
			}
		}
	}
	if len(want) == 0 && !hasPieces(b) {
		return b, nil
	}
	if len(want) > 0 {
		if fetch == nil {
			return nil, fmt.Errorf("%d chunk-list pieces not held: %w", len(want), vaultdb.ErrPieceMissing)
		}
		got, err := fetch(dedupCIDs(want))
		if err != nil {
			return nil, fmt.Errorf("fetching chunk-list pieces: %w", err)
		}
		pieces := make([]entry.Piece, 0, len(got))
		for c, data := range got {
			if _, err := entry.DecodePiece(c, data); err != nil {
				return nil, err
			}
			pieces = append(pieces, entry.Piece{CID: c, Bytes: data})
		}
		err = v.db.PutPieces(pieces)
		v.noteHomeWrite("storing chunk-list pieces", err) // homefull.go
		if err != nil {
			return nil, err
		}
	}
	out := &entry.Body{Versions: make([]entry.Version, len(b.Versions))}
	for i, ver := range b.Versions {
		full, err := entry.ExpandPieces(ver, v.db.Piece)
		if err != nil {
			return nil, err
		}
		out.Versions[i] = full
	}
	return out, nil
}

func hasPieces(b *entry.Body) bool {
	for i := range b.Versions {
		if b.Versions[i].HasPieces() {
			return true
		}
	}
	return false
}

func dedupCIDs(cs []cid.Cid) []cid.Cid {
	seen := make(map[cid.Cid]bool, len(cs))
	out := cs[:0]
	for _, c := range cs {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// piecesFrom fetches pieces from peer p (device or relay dev) over the
// chunk protocol.
func (v *vault) piecesFrom(ctx context.Context, p peer.ID, dev keys.DeviceID) pieceFetcher {
	return func(cids []cid.Cid) (map[cid.Cid][]byte, error) {
		got := make(map[cid.Cid][]byte, len(cids))
		missing, err := v.fetchChunks(ctx, p, dev, cids, func(c cid.Cid, data []byte) error {
			got[c] = data
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("%w: %s and %d more", errPieceUnavailable, missing[0], len(missing)-1)
		}
		return got, nil
	}
}

// verifyBlob checks that data is what c names: a chunk envelope
// (chunk.VerifyCID) or a piece (its CID only; entry.DecodePiece checks
// the rest where it is used).
func verifyBlob(c cid.Cid, data []byte) error {
	if entry.IsPieceCID(c) {
		if len(data) > entry.MaxPieceSize {
			return fmt.Errorf("piece %s of %d bytes: %w", c, len(data), entry.ErrFieldTooLarge)
		}
		if !entry.CIDOf(data).Equals(c) {
			return fmt.Errorf("piece %s: %w", c, chunk.ErrCIDMismatch)
		}
		return nil
	}
	return chunk.VerifyCID(c, data)
}
