package relay

import (
	"container/list"
	"errors"
	"fmt"
	"sync"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/pack"
)

// Chunk-list pieces (docs/protocol/entries.md, "Pieces"). A version of a
// large file names pieces in its public header instead of chunks: public,
// keyless blocks that list the chunk CIDs. A relay stores them in the
// vault's chunk store beside the chunks, serves them like chunks, and reads
// them to learn which chunks the version needs. So, for a replica:
//
//   - a piece named by a stored entry and not stored is wanted like a
//     chunk; when it arrives (putChunk) it is checked with
//     entry.DecodePiece, and its chunks the store lacks are wanted;
//   - a version that lists pieces is here in full when each piece and
//     every chunk it lists is stored (entryHeldLocked);
//   - a piece and its chunks are live exactly when a version naming the
//     piece is (gc.go), and a quarantined piece, or a chunk a stored piece
//     lists, is wanted again (scrub.go).
//
// Reading a piece from the chunk store must not happen under r.mu: a read
// that finds it corrupt quarantines it and calls replica.lost, which takes
// r.mu. So the code under r.mu works from what it knows without IO:
//
//   - pieceDone: stored pieces whose every chunk was found stored (and is
//     kept stored: GC keeps a live piece's chunks, and a quarantine of one
//     clears the piece's mark), so a held check skips them;
//   - the piece cache: what recently read pieces list (contents of a CID
//     never change, so an entry never goes stale);
//   - unnoted: stored pieces, named by stored entries, whose chunks are
//     still to be checked against the store, because the piece was not in
//     the cache when it was needed. notePending reads them outside the
//     lock, notes their chunks and advances the held prefixes; until then
//     an entry naming one is not counted held.

// pieceCacheRefs bounds the chunk references the piece cache holds, about
// 2 MiB (a cid.Cid and its bytes take about 64): eight pieces of the most
// references, or about thirty of the default average, the pieces a relay
// works on at once while a large file is uploaded. A piece the cache lost
// is read again (one store read of at most 256 KiB); the held check needs
// at most one piece at a time per author, since it marks complete pieces
// in pieceDone and stops at the first incomplete one.
const pieceCacheRefs = 8 * entry.MaxPieceRefs

// pieceBatch is how many pieces notePending reads between two takes of the
// replica's locks: their references fit the cache together, so the held
// check that follows finds them all.
const pieceBatch = pieceCacheRefs / entry.MaxPieceRefs

// pieceCache maps piece CIDs to the chunk CIDs they list, least recently
// used out first, holding at most max references in all. It is safe for
// concurrent use; its lock is taken after r.mu, never before.
type pieceCache struct {
	max int

	mu    sync.Mutex // mu guards the fields below
	n     int        // references held
	items map[cid.Cid]*list.Element
	lru   list.List // of *cachedPiece, most recently used first
}

type cachedPiece struct {
	c    cid.Cid
	refs []cid.Cid
}

func newPieceCache(max int) *pieceCache {
	return &pieceCache{max: max, items: map[cid.Cid]*list.Element{}}
}

// get returns the chunks piece c lists, if the cache holds them. The slice
// is shared: callers must not modify it.
func (pc *pieceCache) get(c cid.Cid) ([]cid.Cid, bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	el, ok := pc.items[c]
	if !ok {
		return nil, false
	}
	pc.lru.MoveToFront(el)
	return el.Value.(*cachedPiece).refs, true
}

// put records that piece c lists refs (which the cache keeps), evicting
// the least recently used pieces beyond the bound.
func (pc *pieceCache) put(c cid.Cid, refs []cid.Cid) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if el, ok := pc.items[c]; ok {
		pc.lru.MoveToFront(el)
		return
	}
	pc.items[c] = pc.lru.PushFront(&cachedPiece{c: c, refs: refs})
	pc.n += len(refs)
	for pc.n > pc.max && pc.lru.Len() > 1 {
		el := pc.lru.Back()
		p := pc.lru.Remove(el).(*cachedPiece)
		delete(pc.items, p.c)
		pc.n -= len(p.refs)
	}
}

// decodePiece checks data against piece CID c (entry.DecodePiece: the
// hash, the size, canonical form and every reference) and returns the
// chunk CIDs it lists. Sizes are not kept: a relay cannot check them
// against anything (the version's sizes are in the sealed body) and needs
// only the CIDs.
func decodePiece(c cid.Cid, data []byte) ([]cid.Cid, error) {
	refs, err := entry.DecodePiece(c, data)
	if err != nil {
		return nil, err
	}
	out := make([]cid.Cid, len(refs))
	for i, ref := range refs {
		out[i] = ref.CID
	}
	return out, nil
}

// readPiece returns the chunks stored piece c lists, from the cache or the
// chunk store (pack.ErrNotFound, wrapped, when it is not stored; a copy
// found corrupt is quarantined, and lost called, before it returns). It
// must be called with neither r.mu nor r.gcBar held.
func (r *replica) readPiece(c cid.Cid) ([]cid.Cid, error) {
	if refs, ok := r.pieces.get(c); ok {
		return refs, nil
	}
	data, err := r.chunks.Get(c)
	if err != nil {
		return nil, fmt.Errorf("reading piece %s: %w", c, err)
	}
	refs, err := decodePiece(c, data)
	if err != nil {
		return nil, fmt.Errorf("reading piece %s: %w", c, err)
	}
	r.pieces.put(c, refs)
	return refs, nil
}

// notePieceRefLocked is noteLocked for a piece p a stored entry names: the
// piece is wanted if it is not stored, and its chunks are checked now if
// its contents are known, else by notePending.
func (r *replica) notePieceRefLocked(p cid.Cid) {
	if r.wanted.has(p) {
		return
	}
	ok, err := r.chunks.Has(p)
	switch {
	case err != nil:
		r.unnoted[p] = true // notePending finds out
		return
	case !ok:
		r.wanted.add(p)
		return
	case r.pieceDone[p] && r.gcNoted == nil:
		return // every chunk is stored, and no collection needs to hear of them
	}
	if refs, ok := r.pieces.get(p); ok {
		r.notePieceLocked(p, refs)
		return
	}
	r.unnoted[p] = true
}

// notePieceLocked checks the chunks stored piece p lists (refs): it wants
// those the store lacks, records them for a running collection, and marks
// the piece done when none is missing. A store error leaves the piece
// unnoted, so it is checked again.
func (r *replica) notePieceLocked(p cid.Cid, refs []cid.Cid) {
	delete(r.unnoted, p)
	complete := true
	for _, c := range refs {
		if r.gcNoted != nil {
			r.gcNoted[c] = struct{}{}
		}
		if r.wanted.has(c) {
			complete = false
			continue
		}
		ok, err := r.chunks.Has(c)
		switch {
		case err != nil:
			r.unnoted[p] = true
			complete = false
		case !ok:
			r.wanted.add(c)
			complete = false
		}
	}
	if r.gcNoted != nil {
		r.gcNoted[p] = struct{}{}
		r.gcPieces[p] = struct{}{}
	}
	if complete {
		r.pieceDone[p] = true
	} else {
		delete(r.pieceDone, p)
	}
}

// pieceHeldLocked reports whether piece p and every chunk it lists are
// stored; if not, missing is what it lacks (cid.Undef while the piece is
// to be read: the piece is then unnoted, for notePending).
func (r *replica) pieceHeldLocked(p cid.Cid) (held bool, missing cid.Cid) {
	if r.wanted.has(p) {
		return false, p
	}
	if r.unnoted[p] {
		// Before pieceDone: a piece a running collection must hear of is
		// unnoted while done, and its chunks may be dropped before it is
		// read (gc.go, pieceMarksAfterGCLocked).
		return false, cid.Undef
	}
	if r.pieceDone[p] {
		return true, cid.Undef
	}
	refs, ok := r.pieces.get(p)
	if !ok {
		r.unnoted[p] = true
		return false, cid.Undef
	}
	for _, c := range refs {
		if r.wanted.has(c) {
			return false, c
		}
	}
	r.pieceDone[p] = true
	return true, cid.Undef
}

// notePending reads the unnoted pieces, notes their chunks and advances
// the held prefixes, a batch at a time, until no piece is left unnoted
// that it has not tried; a piece found not stored is wanted. It must be
// called with neither r.mu nor r.gcBar held. Each piece is tried once per
// call (one that fails to read stays unnoted for the next call), so the
// loop ends after at most one read per piece the stored entries name.
func (r *replica) notePending() {
	tried := map[cid.Cid]bool{}
	for {
		r.mu.Lock()
		batch := make([]cid.Cid, 0, pieceBatch)
		for c := range r.unnoted {
			if !tried[c] {
				tried[c] = true
				batch = append(batch, c)
				if len(batch) == pieceBatch {
					break
				}
			}
		}
		r.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		refs := make([][]cid.Cid, len(batch))
		errs := make([]error, len(batch))
		for i, c := range batch {
			refs[i], errs[i] = r.readPiece(c)
		}
		kick := false
		r.gcBar.RLock() // GC is not dropping chunks while these are noted
		r.mu.Lock()
		for i, c := range batch {
			if !r.unnoted[c] {
				continue // noted meanwhile, or no longer needed
			}
			switch err := errs[i]; {
			case err == nil:
				r.notePieceLocked(c, refs[i])
				kick = true
			case errors.Is(err, pack.ErrNotFound), errors.Is(err, pack.ErrCorrupt):
				// Dropped or quarantined since it was noted: fetch it.
				delete(r.unnoted, c)
				if ok, herr := r.chunks.Has(c); herr == nil && !ok && !r.wanted.has(c) {
					r.wanted.add(c)
					kick = true
				}
			default:
				r.log.Warn("reading a stored piece; its entries wait until it can be read", "cid", c, "err", err)
			}
		}
		if r.advanceLocked() {
			r.grewLocked()
		}
		r.mu.Unlock()
		r.gcBar.RUnlock()
		if kick {
			r.kickFetch()
		}
	}
}

// piecesListing returns, for every piece named by a stored entry that
// lists one of lost (or could not be read), what it lists (nil when it
// could not be read). lost calls it before taking its locks: finding which
// pieces list a lost chunk means reading every stored piece not in the
// cache, which a quarantine, being rare, can afford.
func (r *replica) piecesListing(lost map[cid.Cid]bool) map[cid.Cid][]cid.Cid {
	out := map[cid.Cid][]cid.Cid{}
	seen := map[cid.Cid]bool{}
	for a, h := range r.db.Heads() {
		var names []cid.Cid
		err := r.db.Range(a, 1, h.Seq, func(e *entry.Entry) error {
			for _, hd := range e.Headers() {
				for _, c := range hd.Refs {
					if entry.IsPieceCID(c) && !seen[c] {
						seen[c] = true
						names = append(names, c)
					}
				}
			}
			return nil
		})
		if err != nil {
			r.log.Warn("reading stored entries after a quarantine", "author", a, "err", err)
		}
		for _, p := range names {
			refs, err := r.readPiece(p)
			switch {
			case errors.Is(err, pack.ErrNotFound), errors.Is(err, pack.ErrCorrupt):
				// Not stored: wanted, and checked when it arrives.
			case err != nil:
				out[p] = nil
			default:
				for _, c := range refs {
					if lost[c] {
						out[p] = refs
						break
					}
				}
			}
		}
	}
	return out
}
