package reconcile

import (
	"bytes"
	"context"
	"errors"
	"slices"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/carry"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/homefull"
	"github.com/weftsync/weft/protocol"
)

// smallBatch bounds how many files one WriteFiles batch holds.
const smallBatch = 256

// smallFiles carries out, in batches that share their fsyncs, every
// decision among paths that is batchable (carry.Decided.Batchable: a file
// carried inline in its entry, written as the winner and nothing else).
// Decisions come from decideLocked and failures and successes are
// recorded as carry.Out's are (unsettled, CommitIndexes, settled): only
// the writing is batched. It returns the paths it did not carry out, in
// the order of paths (sorted, as engine.Order's Adds are), for carry.Out
// one by one.
//
// It takes the paths in log order (inLogOrder), not in path order: the
// inline bytes of a version not in the cache are read back with their
// whole entry, and in path order a large backlog of paths whose entries
// interleave read one entry of some 200 KB per file, once the 8 MiB
// cache no longer held them all (a first sync of 100,000 notes applied
// 100 files a second, docs/benchmarks.md). In log order each entry is
// read at most once.
func (r *Reconciler) smallFiles(ctx context.Context, paths []string) []string {
	var rest, rescan []string // rescan: locally changed, scanned after the batches
	var batch []carry.Decided
	ordered := r.inLogOrder(paths)
	for i := 0; i < len(ordered); i += smallBatch {
		chunk := ordered[i:min(i+smallBatch, len(ordered))]
		if ctx.Err() != nil {
			rest = append(rest, chunk...)
			continue
		}
		for k, d := range r.decideAll(chunk) {
			if !d.ok || d.err != nil || !d.d.Batchable() {
				rest = append(rest, chunk[k])
				continue
			}
			r.v.Decided(chunk[k])
			batch = append(batch, d.d)
		}
		rest, rescan = r.writeSmall(ctx, batch, rest, rescan)
		batch = batch[:0]
	}
	if len(rescan) > 0 {
		if err := r.v.Scan(ctx, rescan); err != nil && ctx.Err() == nil {
			r.v.Log().Warn("rescanning locally changed files", "err", err)
		}
	}
	slices.Sort(rest)
	return rest
}

// writeSmall writes one batch of batchable decisions with one WriteFiles
// and records them with one commit. A decision a scan made stale, or
// whose inline content cannot be read back, goes to rest, to be decided
// again alone; a file changed locally since its scan goes to rescan.
func (r *Reconciler) writeSmall(ctx context.Context, batch []carry.Decided, rest, rescan []string) ([]string, []string) {
	if len(batch) == 0 {
		return rest, rescan
	}
	// Hold off scans while the batch lands and is indexed: a watcher scan
	// in between would see our own writes as local additions.
	release := r.v.HoldScans()
	defer release()
	keep := batch[:0]
	for _, d := range batch {
		if !d.Still() {
			rest = append(rest, d.Path)
			continue
		}
		// Inline contents are not kept in bodies.
		ver, err := r.v.WithInline(d.Dec.Winner.ID, d.Winner)
		if err != nil {
			rest = append(rest, d.Path)
			continue
		}
		d.Winner = ver
		keep = append(keep, d)
	}
	batch = keep
	if len(batch) == 0 {
		return rest, rescan
	}
	ws := make([]folder.FileWrite, 0, len(batch))
	for _, d := range batch {
		// As carry.Version does: a chunked file replaced by a small one
		// goes to the version store first (its content is in no log).
		r.v.KeepBeforeReplace(d.Cur, d.Had)
		ws = append(ws, folder.FileWrite{
			Version: folder.FileVersion{Path: d.Path, Size: int64(d.Winner.Size), MTime: d.Winner.MTime, Executable: d.Winner.Mode&0o111 != 0},
			Content: bytes.NewReader(d.Winner.Inline),
		})
	}
	res := r.v.Applier().WriteFiles(ctx, ws)
	var recs []Indexed
	var done []carry.Decided
	for i, w := range res {
		d := batch[i]
		if w.Err != nil {
			r.unsettled(ctx, d.Path, w.Err)
			if errors.Is(w.Err, folder.ErrLocalChange) {
				rescan = append(rescan, d.Path)
			}
			continue
		}
		recs = append(recs, Indexed{d.Path, carry.FromInfo(d.Dec.Winner.ID, d.Winner, w.Outcome.Info)})
		done = append(done, d)
	}
	if len(recs) == 0 {
		return rest, rescan
	}
	if err := r.v.CommitIndexes(recs...); err != nil {
		// One commit for the batch: one log line, not one per file (a full
		// home disk is logged once by the vault and is the folder's error,
		// not the paths').
		for _, d := range done {
			r.fail(d.Path, err)
		}
		if !errors.Is(err, homefull.ErrFull) && ctx.Err() == nil {
			r.v.Log().Error("recording applied files", "err", err)
		}
		return rest, rescan
	}
	settled := make([]string, len(done))
	for i, d := range done {
		settled[i] = d.Path
	}
	r.settled(settled...)
	for _, d := range done {
		r.v.Wrote(int64(d.Winner.Size))
		r.v.Publish(api.Event{Type: api.EventApplied, Folder: r.v.Folder(), Path: d.Path, Kind: "file", Bytes: int64(d.Winner.Size)})
	}
	return rest, rescan
}

// inLogOrder returns paths ordered by the ID (author, sequence, index) of
// their first head, the order of the entries that carry them; paths with
// no head come last. It holds the vault's lock in steps, not for the
// whole batch.
func (r *Reconciler) inLogOrder(paths []string) []string {
	type keyed struct {
		path string
		id   protocol.VersionID
		none bool
	}
	ks := make([]keyed, len(paths))
	const step = 4096
	for i := 0; i < len(paths); i += step {
		r.v.Locked(func(s State) {
			g := s.Graph()
			for j := i; j < min(i+step, len(paths)); j++ {
				ks[j].path = paths[j]
				h, n := g.FirstHead(paths[j])
				ks[j].id, ks[j].none = h.ID, n == 0
			}
		})
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		if a.none != b.none {
			if a.none {
				return 1
			}
			return -1
		}
		return a.id.Compare(b.id)
	})
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.path
	}
	return out
}
