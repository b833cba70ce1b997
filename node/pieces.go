package node

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/protocol"
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

// A piece that is missing or damaged when the log is reopened (its file
// deleted, or rotted: the CID check finds it) does not stop the vault from
// opening. The version is kept with its piece references instead of its
// chunk list (expandStored), which is all the sync core needs to decide;
// a damaged file is moved aside; and before the device acts on such a
// version it fetches the pieces again from a connected member
// (repairPieces). Only that version's content waits for a peer; every
// other path syncs.

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

// expandBody returns b with every version's pieces expanded into its
// chunk list. Pieces not in the piece store are fetched with fetch (nil:
// none may be fetched, as when reopening the log) and stored first.
func (v *vault) expandBody(b *entry.Body, fetch pieceFetcher) (*entry.Body, error) {
	var want []cid.Cid
	read := map[cid.Cid][]entry.ChunkRef{} // each piece decoded once
	for i := range b.Versions {
		for _, c := range entry.PieceCIDs(&b.Versions[i]) {
			refs, err := v.db.Piece(c)
			if err == nil {
				read[c] = refs
				continue
			}
			// Missing, or damaged here (this device's trouble, not the
			// sender's): set aside and fetched again.
			if !errors.Is(err, vaultdb.ErrPieceMissing) {
				v.log.Warn("a stored chunk-list piece is damaged; fetching it again", "piece", c, "err", err)
				if err := v.db.SetAsidePiece(c); err != nil {
					return nil, err
				}
			}
			want = append(want, c)
		}
	}
	if len(want) == 0 && !b.HasPieces() {
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
			refs, err := entry.DecodePiece(c, data)
			if err != nil {
				return nil, err
			}
			read[c] = refs
			pieces = append(pieces, entry.Piece{CID: c, Bytes: data})
		}
		err = v.db.PutPieces(pieces)
		v.noteHomeWrite("storing chunk-list pieces", err) // homefull.go
		if err != nil {
			return nil, err
		}
	}
	get := func(c cid.Cid) ([]entry.ChunkRef, error) {
		if refs, ok := read[c]; ok {
			return refs, nil
		}
		return v.db.Piece(c)
	}
	out := &entry.Body{Versions: make([]entry.Version, len(b.Versions))}
	for i, ver := range b.Versions {
		full, err := entry.ExpandPieces(ver, get)
		if err != nil {
			return nil, err
		}
		out.Versions[i] = full
	}
	return out, nil
}

// dedupCIDs drops repeated CIDs, keeping the first of each, in place.
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
		missing, err := v.fetchChunks(ctx, p, dev, cids, false, func(c cid.Cid, data []byte) error {
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

// expandStored is expandBody for an entry read back from this device's own
// log: a version whose pieces are missing or damaged here is kept with its
// piece references (see above) and reported, instead of failing the open.
func (v *vault) expandStored(b *entry.Body) *entry.Body {
	if !b.HasPieces() {
		return b
	}
	out := &entry.Body{Versions: make([]entry.Version, len(b.Versions))}
	for i, ver := range b.Versions {
		full, err := entry.ExpandPieces(ver, v.db.Piece)
		if err != nil {
			v.log.Warn("a version's chunk-list pieces are missing or damaged here; fetching them again from a member before using it",
				"path", ver.Path, "err", err)
			v.setAsideDamagedPieces(ver)
			full = ver
		}
		out.Versions[i] = full
	}
	return out
}

// setAsideDamagedPieces moves aside the stored pieces of ver that fail
// their check, so that a fetched copy can take their place.
func (v *vault) setAsideDamagedPieces(ver entry.Version) {
	for _, c := range entry.PieceCIDs(&ver) {
		if _, err := v.db.Piece(c); err != nil && !errors.Is(err, vaultdb.ErrPieceMissing) {
			if err := v.db.SetAsidePiece(c); err != nil {
				v.log.Warn("moving a damaged piece aside", "piece", c, "err", err)
			}
		}
	}
}

// repairPieces makes sure every head of path holds its whole chunk list,
// fetching from connected members the pieces a version still lacks (see
// above). It returns an error wrapping vaultdb.ErrPieceMissing while some
// cannot be had.
func (v *vault) repairPieces(ctx context.Context, path string) error {
	v.mu.Lock()
	var todo []protocol.VersionID
	for _, h := range v.view.Graph.Heads(path) {
		if ver, ok := v.view.Bodies[h.ID]; ok && ver.HasPieces() {
			todo = append(todo, h.ID)
		}
	}
	v.mu.Unlock()
	for _, id := range todo {
		v.mu.Lock()
		ver := v.view.Bodies[id]
		v.mu.Unlock()
		var want []cid.Cid
		for _, c := range entry.PieceCIDs(&ver) {
			if _, err := v.db.Piece(c); err != nil {
				want = append(want, c)
			}
		}
		var (
			mu  sync.Mutex
			got []entry.Piece
		)
		if len(want) > 0 {
			err := v.fetchFromPeers(ctx, dedupCIDs(want), func(c cid.Cid, data []byte) error {
				if _, err := entry.DecodePiece(c, data); err != nil {
					return err
				}
				mu.Lock()
				got = append(got, entry.Piece{CID: c, Bytes: data})
				mu.Unlock()
				return nil
			})
			if err != nil {
				return fmt.Errorf("%q: fetching its chunk-list pieces: %w: %w", path, vaultdb.ErrPieceMissing, err)
			}
			if err := v.db.PutPieces(got); err != nil {
				return fmt.Errorf("%q: storing its chunk-list pieces: %w", path, err)
			}
		}
		full, err := entry.ExpandPieces(ver, v.db.Piece)
		if err != nil {
			return fmt.Errorf("%q: %w", path, err)
		}
		v.mu.Lock()
		v.view.Bodies[id] = full
		v.mu.Unlock()
		v.log.Info("fetched a version's chunk-list pieces again", "path", path, "pieces", len(want))
	}
	return nil
}
