package node

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/carry"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/reconcile"
	"github.com/weftsync/weft/node/record"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// carrySide is the vault as node/carry sees it while it carries a
// decision out: its folder, index, bodies, content, scan lock and log.
type carrySide struct{ v *vault }

var _ carry.Vault = carrySide{}

func (c carrySide) Folder() string           { return c.v.cfg.Folder }
func (c carrySide) Log() *slog.Logger        { return c.v.log }
func (c carrySide) Applier() *folder.Applier { return c.v.applier }
func (c carrySide) Now() time.Time           { return c.v.now() }
func (c carrySide) Publish(e api.Event)      { c.v.events.Publish(e) }
func (c carrySide) Wrote(n int64)            { c.v.pending.written.Add(n) }
func (c carrySide) Decided(path string)      { c.v.decidedHook(path) }

func (c carrySide) KeepBeforeReplace(cur vaultdb.Record, had bool) {
	c.v.keep.KeepBeforeReplace(cur, had)
}

func (c carrySide) KeepSole(id entry.VersionID, envelope func(cid.Cid) ([]byte, error)) {
	c.v.keep.KeepSole(id, envelope)
}

func (c carrySide) Index(path string) (vaultdb.Record, bool) {
	c.v.mu.Lock()
	defer c.v.mu.Unlock()
	return c.v.index.Get(path)
}

func (c carrySide) Body(id protocol.VersionID) entry.Version {
	c.v.mu.Lock()
	defer c.v.mu.Unlock()
	ver, _ := c.v.view.Body(id)
	return ver
}

func (c carrySide) WithInline(id protocol.VersionID, ver entry.Version) (entry.Version, error) {
	return c.v.withInline(id, ver) // inline.go
}

func (c carrySide) Content(ctx context.Context, ver entry.Version) (io.Reader, func()) {
	return c.v.contentReader(ctx, ver)
}

func (c carrySide) Hash(ctx context.Context, path string, b []byte) ([32]byte, []byte, []entry.ChunkRef, error) {
	h, err := chunkHasher{keys: c.v.crypt.ChunkKeys()}.Hash(ctx, path, bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return [32]byte{}, nil, nil, err
	}
	x := h.Extra.(record.Content)
	return h.Hash, x.Inline, x.Chunks, nil
}

func (c carrySide) SealLocal(id cid.Cid, plain []byte) ([]byte, bool, error) {
	return c.v.crypt.SealLocalAppend(nil, id, plain)
}

func (c carrySide) HoldScans() func() {
	c.v.scanMu.Lock()
	return c.v.scanMu.Unlock
}

func (c carrySide) Scan(ctx context.Context, paths []string) error {
	_, err := c.v.scan(ctx, paths)
	return err
}

func (c carrySide) CommitIndex(path string, rec vaultdb.Record) error {
	return c.v.commitIndex(reconcile.Indexed{Path: path, Rec: rec})
}

// RecordResolution authors the entry of a resolution (engine.Resolution:
// the written version superseding every head, and a version for each
// conflict copy not already in the graph) with the index records, and
// notes the apply at path, so an editor's save landing right after it
// supersedes what was there before (applyrace.go).
func (c carrySide) RecordResolution(path string, dec protocol.Decision, written entry.Version, copies []carry.Copy, records []vaultdb.Record) error {
	v := c.v
	paths := []string{path}
	var fresh []engine.NewCopy
	v.mu.Lock()
	for _, cc := range copies {
		paths = append(paths, cc.Ver.Path)
		if cc.Existing != (entry.VersionID{}) {
			continue // already recorded, by this device or another: index only
		}
		// The index still holds what was at the name before the copy.
		cur, had := v.index.Get(cc.Ver.Path)
		fresh = append(fresh, engine.NewCopy{Body: cc.Ver, Disk: diskOf(cur), Had: had})
	}
	versions := engine.Resolution(v.view.Graph, dec, written, fresh)
	old, had := v.index.Get(path)
	v.mu.Unlock()
	v.authorMu.Lock()
	defer v.authorMu.Unlock()
	if err := v.author(versions, paths, records); err != nil {
		return err
	}
	// The winner or the merge is what is at path now (author set its
	// version in records).
	v.mu.Lock()
	v.noteAppliedLocked(path, old, had, records[0])
	v.mu.Unlock()
	return nil
}

// reconcileSide is the vault as node/reconcile sees it while it runs a
// pass: what carrying a decision out needs, and its state, checks and
// records around a pass.
type reconcileSide struct{ carrySide }

var _ reconcile.Vault = reconcileSide{}

func (r reconcileSide) Locked(f func(reconcile.State)) {
	r.v.mu.Lock()
	defer r.v.mu.Unlock()
	f(reconcileState{r.v})
}

func (r reconcileSide) Stopped() bool {
	_, err := r.v.guard()
	return err != nil
}

// Held: applies wait while the home disk is full (retryHome kicks once it
// has room, homefull.go) and until this device's log is known whole and
// the folder rescanned (logtail.go: an apply could otherwise meet a local
// edit not yet recorded).
func (r reconcileSide) Held() bool { return r.v.home.Full() || r.v.tail.ReconcileHeld() }

func (r reconcileSide) RepairPieces(ctx context.Context, path string) error {
	return r.v.repairPieces(ctx, path) // pieces.go
}

func (r reconcileSide) CommitIndexes(recs ...reconcile.Indexed) error {
	return r.v.commitIndex(recs...)
}

func (r reconcileSide) IncomingHeld(verdict engine.IncomingVerdict) {
	r.v.noteIncomingHold(verdict) // massdelete.go
}

func (r reconcileSide) Unsettled(path string, err error) {
	r.v.log.Warn("applying", "path", path, "err", err)
	r.v.events.Publish(api.Event{Type: api.EventError, Folder: r.v.cfg.Folder, Path: path, Error: err.Error()})
}

func (r reconcileSide) Took(start time.Time) { r.v.report.apply(start) }

func (r reconcileSide) Reconciled() {
	r.v.events.Publish(api.Event{Type: api.EventReconciled, Folder: r.v.cfg.Folder})
}

// reconcileState is the vault's state as a pass reads it, with v.mu held.
type reconcileState struct{ v *vault }

func (s reconcileState) Graph() *protocol.Graph { return s.v.view.Graph }

func (s reconcileState) Body(id protocol.VersionID) (entry.Version, bool) { return s.v.view.Body(id) }

func (s reconcileState) Record(path string) (vaultdb.Record, bool) { return s.v.index.Get(path) }

func (s reconcileState) View() engine.View { return guardIndex(s) }

func (s reconcileState) PassBytes(n int64) {
	s.v.pending.passBytes = n
	s.v.pending.written.Store(0)
}

func (s reconcileState) Settled(paths ...string) {
	for _, p := range paths {
		s.v.repairedLocked(p) // rot.go
	}
}
