package pieces

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// Store is the vault's piece store.
type Store interface {
	// Piece returns a stored piece's chunk references, an error wrapping
	// vaultdb.ErrPieceMissing when it is not stored, another when it is
	// stored but damaged.
	Piece(c cid.Cid) ([]entry.ChunkRef, error)
	// SetAsidePiece moves a damaged stored piece out of the way.
	SetAsidePiece(c cid.Cid) error
	// PutPieces stores pieces durably.
	PutPieces(ps []entry.Piece) error
}

// Fetcher fetches pieces by CID and returns their bytes, each checked
// against its CID.
type Fetcher func(cids []cid.Cid) (map[cid.Cid][]byte, error)

// ErrUnavailable means the sender of an entry did not have a piece the
// entry names.
var ErrUnavailable = errors.New("chunk-list piece unavailable from the sender")

// Pieces expands and repairs the chunk lists of one vault's versions.
type Pieces struct {
	store Store
	log   *slog.Logger
	// stored, when set, hears of every write to the store and its error
	// (the home disk's fullness, node/homefull).
	stored func(what string, err error)
}

// New returns the pieces of a vault whose piece store is store.
func New(store Store, log *slog.Logger, stored func(what string, err error)) *Pieces {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if stored == nil {
		stored = func(string, error) {}
	}
	return &Pieces{store: store, log: log, stored: stored}
}

// Expand returns b with every version's pieces expanded into its chunk
// list. Pieces not in the store are fetched with fetch (nil: none may be
// fetched, as when reopening the log) and stored first; a stored piece
// that fails its check is set aside and fetched again.
func (p *Pieces) Expand(b *entry.Body, fetch Fetcher) (*entry.Body, error) {
	var want []cid.Cid
	read := map[cid.Cid][]entry.ChunkRef{} // each piece decoded once
	for i := range b.Versions {
		for _, c := range entry.PieceCIDs(&b.Versions[i]) {
			refs, err := p.store.Piece(c)
			if err == nil {
				read[c] = refs
				continue
			}
			// Missing, or damaged here (this device's trouble, not the
			// sender's): set aside and fetched again.
			if !errors.Is(err, vaultdb.ErrPieceMissing) {
				p.log.Warn("a stored chunk-list piece is damaged; fetching it again", "piece", c, "err", err)
				if err := p.store.SetAsidePiece(c); err != nil {
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
		got, err := fetch(Dedup(want))
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
		err = p.store.PutPieces(pieces)
		p.stored("storing chunk-list pieces", err)
		if err != nil {
			return nil, err
		}
	}
	get := func(c cid.Cid) ([]entry.ChunkRef, error) {
		if refs, ok := read[c]; ok {
			return refs, nil
		}
		return p.store.Piece(c)
	}
	out := &entry.Body{Versions: make([]entry.Version, len(b.Versions)), Author: b.Author}
	for i, ver := range b.Versions {
		full, err := entry.ExpandPieces(ver, get)
		if err != nil {
			return nil, err
		}
		out.Versions[i] = full
	}
	return out, nil
}

// ExpandStored is Expand for an entry read back from this device's own
// log: a version whose pieces are missing or damaged here is kept with
// its piece references (Repair fetches them before it is acted on) and
// reported, instead of failing the open.
func (p *Pieces) ExpandStored(b *entry.Body) *entry.Body {
	if !b.HasPieces() {
		return b
	}
	out := &entry.Body{Versions: make([]entry.Version, len(b.Versions)), Author: b.Author}
	for i, ver := range b.Versions {
		full, err := entry.ExpandPieces(ver, p.store.Piece)
		if err != nil {
			p.log.Warn("a version's chunk-list pieces are missing or damaged here; fetching them again from a member before using it",
				"path", ver.Path, "err", err)
			p.setAsideDamaged(ver)
			full = ver
		}
		out.Versions[i] = full
	}
	return out
}

// setAsideDamaged moves aside the stored pieces of ver that fail their
// check, so that a fetched copy can take their place.
func (p *Pieces) setAsideDamaged(ver entry.Version) {
	for _, c := range entry.PieceCIDs(&ver) {
		if _, err := p.store.Piece(c); err != nil && !errors.Is(err, vaultdb.ErrPieceMissing) {
			if err := p.store.SetAsidePiece(c); err != nil {
				p.log.Warn("moving a damaged piece aside", "piece", c, "err", err)
			}
		}
	}
}

// Repair returns ver (a version still holding piece references) with its
// whole chunk list, fetching with fetch the pieces the store lacks and
// storing them first, and how many it fetched. The error wraps
// vaultdb.ErrPieceMissing while some cannot be had. fetch may call got
// from several goroutines at once.
func (p *Pieces) Repair(ctx context.Context, ver entry.Version, fetch func(ctx context.Context, cids []cid.Cid, got func(c cid.Cid, data []byte) error) error) (entry.Version, int, error) {
	var want []cid.Cid
	for _, c := range entry.PieceCIDs(&ver) {
		if _, err := p.store.Piece(c); err != nil {
			want = append(want, c)
		}
	}
	if len(want) > 0 {
		var (
			mu  sync.Mutex
			got []entry.Piece
		)
		err := fetch(ctx, Dedup(want), func(c cid.Cid, data []byte) error {
			if _, err := entry.DecodePiece(c, data); err != nil {
				return err
			}
			mu.Lock()
			got = append(got, entry.Piece{CID: c, Bytes: data})
			mu.Unlock()
			return nil
		})
		if err != nil {
			return ver, 0, fmt.Errorf("fetching its chunk-list pieces: %w: %w", vaultdb.ErrPieceMissing, err)
		}
		err = p.store.PutPieces(got)
		p.stored("storing chunk-list pieces", err)
		if err != nil {
			return ver, 0, fmt.Errorf("storing its chunk-list pieces: %w", err)
		}
	}
	full, err := entry.ExpandPieces(ver, p.store.Piece)
	if err != nil {
		return ver, 0, err
	}
	return full, len(want), nil
}

// Dedup drops repeated CIDs, keeping the first of each, in place.
func Dedup(cs []cid.Cid) []cid.Cid {
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
