package node

import (
	"context"
	"fmt"
	"io"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/content"
	"github.com/weftsync/weft/node/homefull"
	"github.com/weftsync/weft/node/keeper"
	"github.com/weftsync/weft/node/reconcile"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// decidedHook runs v.onDecided, if a test set it: after a path's decision
// is made and before the scan lock is taken to carry it out, the window in
// which a concurrent scan can make the decision stale.
func (v *vault) decidedHook(path string) {
	if f := v.onDecided.Load(); f != nil {
		(*f)(path)
	}
}

// commitIndex records, in one commit, that each path now holds its record
// (records the index already holds are left out), then notes each in
// memory (appliedLocked). A full home disk comes back as errHomeFull.
// Both apply paths commit through it.
func (v *vault) commitIndex(recs ...reconcile.Indexed) error {
	u := &vaultdb.Update{}
	todo := recs[:0:0]
	v.mu.Lock()
	for _, r := range recs {
		old, had := v.index.Get(r.Path)
		if had == (r.Rec.Kind != 0) && (!had || reconcile.SameRecord(old, r.Rec)) {
			continue
		}
		if r.Rec.Kind == 0 {
			u.DeleteIndex(r.Path)
		} else {
			u.PutIndex(r.Path, r.Rec)
		}
		todo = append(todo, r)
	}
	v.mu.Unlock()
	if len(todo) == 0 {
		return nil
	}
	err := v.db.Commit(u)
	v.noteHomeWrite("recording applied files", err) // homefull.go
	if err != nil {
		if homefull.IsDiskFull(err) {
			err = fmt.Errorf("%w: %w", errHomeFull, err)
		}
		if len(todo) == 1 {
			return fmt.Errorf("recording %s in the index: %w", todo[0].Path, err)
		}
		return fmt.Errorf("recording %d applied files in the index: %w", len(todo), err)
	}
	v.mu.Lock()
	notes := make([]appliedNote, 0, len(todo))
	for _, r := range todo {
		old, had := v.index.Get(r.Path)
		notes = append(notes, v.appliedLocked(r.Path, old, had, r.Rec))
	}
	v.postApplied(notes...)
	v.grewLocked() // what this device holds in full may have grown
	v.mu.Unlock()
	return nil
}

// appliedLocked records in memory that path now holds rec (committed to
// the index by the caller) where it held old (when had): the folder index,
// the applied-version note that tells an editor's save from our write
// (applyrace.go: returned, for the caller to post with the others of its
// commit), and the keep of the new version. commitIndex, which both apply
// paths commit through, calls it. v.mu must be held.
func (v *vault) appliedLocked(path string, old vaultdb.Record, had bool, rec vaultdb.Record) appliedNote {
	note := v.appliedNoteLocked(path, old, had, rec)
	v.setIndexLocked(path, rec)
	if j, ok := keeper.JobFor(old, had, rec); ok {
		v.keep.Enqueue(j)
	}
	return note
}

// contentReader yields a file version's plaintext in order
// (content.Reader): inline bytes, or its chunks, each re-created from a
// local file when one holds it and fetched from peers otherwise. stop
// releases the producer.
func (v *vault) contentReader(ctx context.Context, ver entry.Version) (io.Reader, func()) {
	return content.Reader(ctx, chunkSources{v}, ver)
}

// chunkSources are where the vault's chunks come from, as content reads
// them: its own files and version store, and its connected peers.
type chunkSources struct{ v *vault }

func (s chunkSources) Local(buf []byte, c cid.Cid) ([]byte, error) {
	return s.v.local.PlaintextInto(buf, c)
}

func (s chunkSources) Fetch(ctx context.Context, cids []cid.Cid, got func(cid.Cid, []byte) error) error {
	return s.v.fetchFromPeersLent(ctx, cids, got)
}

func (s chunkSources) Open(buf []byte, c cid.Cid, env []byte) ([]byte, error) {
	return s.v.crypt.OpenVerifiedChunk(buf, c, env)
}

func (s chunkSources) Pending(d int) { s.v.addPendingFetch(d) }

func (v *vault) addPendingFetch(d int) {
	v.mu.Lock()
	v.pending.toFetch = max(0, v.pending.toFetch+d)
	v.mu.Unlock()
}

// fetchFromPeers fetches cids from the connected members. With several
// members connected the want-list is split across them and fetched in
// parallel; whatever one peer lacks (or fails to send) is then asked of
// the others in turn. got is called for every verified envelope, from
// several goroutines at once, and must be safe for that.
func (v *vault) fetchFromPeers(ctx context.Context, cids []cid.Cid, got func(cid.Cid, []byte) error) error {
	return v.fetchFrom(ctx, cids, false, got)
}

// fetchFromPeersLent is fetchFromPeers with each envelope lent to got:
// valid only until got returns (netsync.FetchChunksLent), so got copies
// what it keeps.
func (v *vault) fetchFromPeersLent(ctx context.Context, cids []cid.Cid, got func(cid.Cid, []byte) error) error {
	return v.fetchFrom(ctx, cids, true, got)
}

// fetchFrom is fetchFromPeers, with envelopes lent to got if lent: the
// connected members and relays share the want-list (content.Spread).
func (v *vault) fetchFrom(ctx context.Context, cids []cid.Cid, lent bool, got func(cid.Cid, []byte) error) error {
	var peers []content.Peer
	for _, p := range v.agent.connectedMembers(v) {
		peers = append(peers, content.Peer{Name: p.dev.Short(), Fetch: func(ctx context.Context, cids []cid.Cid) ([]cid.Cid, error) {
			return v.fetchChunks(ctx, p.id, p.dev, cids, lent, got)
		}})
	}
	return content.Spread(ctx, peers, cids)
}
