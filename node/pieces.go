package node

import (
	"context"
	"fmt"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/node/pieces"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// Chunk-list pieces on a device: node/pieces expands and repairs a
// version's chunk list from the vault's piece store; what is left here is
// what needs the vault: how this device cuts lists, fetching pieces from
// a peer, and repairing the heads of a path before acting on them.

// pieceParams is how this device cuts chunk lists.
func (v *vault) pieceParams() entry.PieceParams {
	if p := v.pieceCfg; p.Direct > 0 {
		return p
	}
	return entry.DefaultPieceParams()
}

// piecesFrom fetches pieces from peer p (device or relay dev) over the
// chunk protocol.
func (v *vault) piecesFrom(ctx context.Context, p peer.ID, dev keys.DeviceID) pieces.Fetcher {
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
			return nil, fmt.Errorf("%w: %s and %d more", pieces.ErrUnavailable, missing[0], len(missing)-1)
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

// repairPieces makes sure every head of path holds its whole chunk list,
// fetching from connected members the pieces a version still lacks
// (pieces.Repair). It returns an error wrapping vaultdb.ErrPieceMissing
// while some cannot be had.
func (v *vault) repairPieces(ctx context.Context, path string) error {
	v.mu.Lock()
	var todo []protocol.VersionID
	for _, h := range v.view.Graph.Heads(path) {
		if ver, ok := v.view.Body(h.ID); ok && ver.HasPieces() {
			todo = append(todo, h.ID)
		}
	}
	v.mu.Unlock()
	for _, id := range todo {
		v.mu.Lock()
		ver, _ := v.view.Body(id)
		v.mu.Unlock()
		full, fetched, err := v.pieces.Repair(ctx, ver, v.fetchFromPeers)
		if err != nil {
			return fmt.Errorf("%q: %w", path, err)
		}
		v.mu.Lock()
		v.view.SetBody(id, full)
		v.mu.Unlock()
		v.log.Info("fetched a version's chunk-list pieces again", "path", path, "pieces", fetched)
	}
	return nil
}
