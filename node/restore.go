package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/history"
	"github.com/weftsync/weft/node/memindex"
	"github.com/weftsync/weft/node/record"
	"github.com/weftsync/weft/node/restore"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
)

// Restore carries out (or, with DryRun, plans) a restore
// (docs/history.md): node/restore over each vault the request names.
// Errors wrap errNotInFolder or one of node/history's errors.
func (b apiBackend) Restore(ctx context.Context, req api.RestoreRequest) (api.RestoreResult, error) {
	if err := history.CheckRequest(req); err != nil {
		return api.RestoreResult{DryRun: req.DryRun, Changes: []api.RestoreChange{}, Failed: []api.RestoreFailure{}}, err
	}
	var at time.Time
	if req.At != "" {
		var err error
		// Relative times count back from the corrected clock, the one
		// entries are dated by (node/clock).
		if at, err = history.ParseAt(req.At, b.vaultNow()); err != nil {
			return api.RestoreResult{DryRun: req.DryRun, Changes: []api.RestoreChange{}, Failed: []api.RestoreFailure{}}, err
		}
	}
	var targets []restore.Target
	if req.Path == "" {
		for _, v := range b.vaultsNow() {
			targets = append(targets, restore.Target{Vault: restoreVault{v}, All: true})
		}
	} else {
		v, rel, err := b.resolvePath(req.Path)
		if err != nil {
			return api.RestoreResult{DryRun: req.DryRun, Changes: []api.RestoreChange{}, Failed: []api.RestoreFailure{}}, err
		}
		targets = append(targets, restore.Target{Vault: restoreVault{v}, Path: rel, All: req.All})
	}
	return restore.Run(ctx, req, at, targets, b.now)
}

// restoreVault is restore.Vault for one vault.
type restoreVault struct{ v *vault }

func (r restoreVault) Folder() string { return r.v.cfg.Folder }
func (r restoreVault) LockScans()     { r.v.scanMu.Lock() }
func (r restoreVault) UnlockScans()   { r.v.scanMu.Unlock() }

func (r restoreVault) PlanOne(path, id string, t int64) ([]history.Item, error) {
	return history.PlanOne(r.v.historyPath(path), id, t, r.v.entryTimes())
}

func (r restoreVault) PlanAll(prefix string, t int64) ([]history.Item, error) {
	v := r.v
	v.mu.Lock()
	byPath := v.versionsByPathLocked(func(p string) bool { return under(p, prefix) })
	index := map[string]engine.Disk{}
	for p := range byPath {
		if rec, ok := v.index.Get(p); ok {
			index[p] = diskOf(rec)
		}
	}
	v.mu.Unlock()
	return history.PlanAll(byPath, index, t, v.entryTimes())
}

func (r restoreVault) Settled(path string) bool {
	r.v.mu.Lock()
	defer r.v.mu.Unlock()
	_, ok := r.v.appliedHeadsLocked(path)
	return ok
}

func (r restoreVault) ScanPaths(ctx context.Context, paths []string) (folder.Result, error) {
	return r.v.scanner.ScanPaths(ctx, paths)
}

func (r restoreVault) Where() history.Where { return &contentWhere{v: r.v} }

func (r restoreVault) Fetch(ctx context.Context, cids []cid.Cid, got func(cid.Cid, []byte) error) error {
	return r.v.fetchFromPeers(ctx, cids, func(c cid.Cid, env []byte) error {
		b, err := r.v.crypt.OpenChunk(c, env)
		if err != nil {
			return fmt.Errorf("chunk %s: %w", c, err)
		}
		return got(c, b)
	})
}

func (r restoreVault) Local(c cid.Cid) ([]byte, error) { return r.v.local.Plaintext(c) }

func (r restoreVault) Stream(ctx context.Context, ver entry.Version) (io.Reader, func()) {
	return r.v.contentReader(ctx, ver)
}

func (r restoreVault) Full(id entry.VersionID, ver entry.Version) (entry.Version, error) {
	return r.v.withInline(id, ver) // inline.go
}

func (r restoreVault) Applier() *folder.Applier { return r.v.applier }

func (r restoreVault) TopNewAncestor(path string) string {
	r.v.mu.Lock()
	defer r.v.mu.Unlock()
	return topNewAncestorLocked(r.v, path)
}

func (r restoreVault) Record(ctx context.Context, paths []string) (bool, error) {
	err := r.v.recordRestored(ctx, paths)
	if errors.Is(err, errAuthoringHeld) {
		return true, nil
	}
	return false, err
}

func (r restoreVault) OwnHead(path string) (entry.VersionID, bool) {
	r.v.mu.Lock()
	defer r.v.mu.Unlock()
	if hs := r.v.view.Graph.Heads(path); len(hs) == 1 && hs[0].ID.Author == r.v.device.ID() {
		return hs[0].ID, true
	}
	return entry.VersionID{}, false
}

// appliedHeadsLocked returns the heads of path, sorted and capped for a
// Supersedes list, and whether this device has applied every one of
// them: the index holds the head's content, or nothing for a deletion.
// v.mu must be held.
func (v *vault) appliedHeadsLocked(path string) ([]entry.VersionID, bool) {
	cur, had := v.index.Get(path)
	var ids []entry.VersionID
	for _, h := range v.view.Graph.Heads(path) {
		applied := !had
		if h.Kind != protocol.KindDeletion {
			applied = had && engine.SameContent(h, diskOf(cur))
		}
		if !applied {
			return nil, false
		}
		ids = append(ids, h.ID)
	}
	slices.SortFunc(ids, func(a, b entry.VersionID) int { return a.Compare(b) })
	if len(ids) > entry.MaxSupersedes {
		ids = ids[:entry.MaxSupersedes]
	}
	return ids, true
}

// topNewAncestorLocked returns the highest ancestor of p that the index
// does not hold (the applier creates it), or p itself: the path whose
// scan records everything the restore of p writes. v.mu must be held.
func topNewAncestorLocked(v *vault, p string) string {
	top := p
	for d := memindex.ParentDir(p); d != ""; d = memindex.ParentDir(d) {
		if _, ok := v.index.Get(d); ok {
			break
		}
		top = d
	}
	return top
}

// recordRestored scans what the restore wrote and records it like any
// local change, except that a version at a path whose heads this device
// had all applied supersedes every one of them (a restore replaces what
// is current, including a deletion). A path whose heads changed meanwhile
// (a remote version arrived) keeps the normal rule, and meets that
// version as a concurrent one. v.scanMu must be held.
func (v *vault) recordRestored(ctx context.Context, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	start := time.Now()
	res, err := v.scanner.ScanPaths(ctx, paths)
	v.report.scan(start, paths, res, err)
	if err != nil {
		return err
	}
	v.authorMu.Lock()
	defer v.authorMu.Unlock()
	params := v.pieceParams()
	var b record.Batch
	flush := func() error {
		if b.Empty() {
			return nil
		}
		err := v.author(b.Versions, b.Paths, b.Records)
		b = record.Batch{}
		return err
	}
	for _, c := range res.Changes {
		v.report.localChange(c)
		v.mu.Lock()
		heads, settled := v.appliedHeadsLocked(c.Path)
		v.mu.Unlock()
		ver, rec, ok := record.Version(recordSide{v}, c, false)
		if !ok && settled && len(heads) > 0 && c.Type == folder.Deleted {
			ver, ok = entry.Version{Path: c.Path, Kind: entry.KindDeletion}, true
		}
		if ok && ver.Kind == entry.KindDeletion {
			// The user asked for it: other devices apply it even when a
			// restore to an earlier time deletes most of the folder.
			ver.Mode = entry.DeletionConfirmed
		}
		if ok {
			if settled && len(heads) > 0 {
				ver.Supersedes = heads
			}
			if !b.Fits(ver, params) {
				if err := flush(); err != nil {
					return err
				}
			}
			b.AddVersion(ver, params)
		}
		b.AddRecord(c.Path, rec)
	}
	return flush()
}
