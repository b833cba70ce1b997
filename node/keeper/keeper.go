package keeper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/pack"
	"github.com/weftsync/weft/store/vaultdb"
	"github.com/weftsync/weft/store/versions"
)

// LowDisk: below this much free space on the home's disk the keeper keeps
// nothing new (sync needs the space more).
const LowDisk = 1 << 30

// ErrNotKept means the version store does not hold a chunk (or there is
// no store).
var ErrNotKept = errors.New("chunk not in the local version store")

// Vault is what the keeper reads of the vault it keeps versions of.
type Vault interface {
	// Version returns the body of version id, if known.
	Version(id entry.VersionID) (entry.Version, bool)
	// FolderBytes is the size of the files the folder index holds: what a
	// policy's budget is a share of.
	FolderBytes() int64
	// Current calls fn with every file version current in the folder
	// (kept ones of them are not pruned).
	Current(fn func(id entry.VersionID))
	// Envelope re-creates chunk c from a file of the folder.
	Envelope(c cid.Cid) ([]byte, error)
	// Fetch asks the connected members for cids and calls got with each
	// envelope that arrives, its CID verified.
	Fetch(ctx context.Context, cids []cid.Cid, got func(c cid.Cid, env []byte) error) error
	// DiskFree is the free space of the home's disk, 0 when unknown.
	DiskFree() int64
}

// Config is what a Keeper is opened with.
type Config struct {
	Dir    string // the version store's directory
	Folder string // the folder's path, for Info
	Vault  Vault
	Policy api.VersionPolicy
	Logger *slog.Logger
	Now    func() time.Time
	// OnDamaged, when set, counts chunks the store dropped as damaged;
	// OnScrubbed the bytes a scrub re-verified.
	OnDamaged  func(n int)
	OnScrubbed func(bytes int64)
}

// Keeper is a vault's version keeping: the store, the queue of versions
// to copy into it and its counters. Run owns the queue's receiving end;
// KeepNow is called synchronously by the applier. A Keeper whose store
// could not be opened keeps nothing and says so in Info.
type Keeper struct {
	cfg    Config
	log    *slog.Logger
	store  *versions.Store // nil when the store could not be opened
	policy atomic.Pointer[api.VersionPolicy]
	queue  chan Job
	prune  chan struct{} // buffer 1: a prune is wanted
	// damaged carries chunks the scrub (or a read) dropped from the store,
	// for the keep loop to fetch again from a peer.
	damaged chan []cid.Cid

	// mu serialises keeping (the keep loop and KeepNow), so a version is
	// copied and named once.
	mu sync.Mutex

	kept, keptBytes, skipped, failed, dropped atomic.Int64
	sincePrune                                atomic.Int64
}

// Job is a version to copy into the store.
type Job struct {
	ID    entry.VersionID
	Fresh bool // it replaced no file version at its path
	// done, when set, makes the job a barrier: the keep loop closes it
	// once every job queued before it is done (Flush).
	done chan struct{}
}

// queueLen bounds the versions waiting for the keeper; beyond it a
// version is not kept (counted as dropped) rather than slowing sync.
const queueLen = 4096

// pruneEvery is how many kept versions trigger a prune; the keep loop
// also prunes hourly (the 30-day window moves with the clock).
const pruneEvery = 64

// maxDamaged bounds the chunks waiting to be fetched again; beyond it the
// oldest are forgotten (their versions read as not kept, truthfully).
const maxDamaged = 4096

// Key is a version's key in the store: author, seq (big endian), index
// (big endian).
func Key(id entry.VersionID) []byte {
	b := make([]byte, 0, len(id.Author)+12)
	b = append(b, id.Author[:]...)
	b = binary.BigEndian.AppendUint64(b, id.Seq)
	return binary.BigEndian.AppendUint32(b, id.Index)
}

// KeepAll is how long p keeps every version before the daily thinning.
func KeepAll(p api.VersionPolicy) time.Duration {
	if p.KeepAllDays == 0 {
		return versions.DefaultKeepAll
	}
	return time.Duration(p.KeepAllDays) * 24 * time.Hour
}

// Open opens the vault's version store. An error opening it leaves a
// Keeper that keeps nothing (logged: sync does not depend on it).
func Open(cfg Config) *Keeper {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	k := &Keeper{cfg: cfg, log: cfg.Logger, queue: make(chan Job, queueLen), prune: make(chan struct{}, 1), damaged: make(chan []cid.Cid, 16)}
	p := cfg.Policy
	k.policy.Store(&p)
	st, err := versions.Open(versions.Config{
		Dir: cfg.Dir, Logger: cfg.Logger, Now: cfg.Now,
		OnQuarantine: func(cs []cid.Cid, _ pack.FoundBy) {
			k.log.Warn("version store: damaged chunks dropped; fetching them again from the vault's devices", "chunks", len(cs))
			if cfg.OnDamaged != nil {
				cfg.OnDamaged(len(cs))
			}
			select {
			case k.damaged <- cs:
			default: // the loop is behind; the next scrub pass finds the rest
			}
		},
	})
	if err != nil {
		k.log.Error("local versions are off: opening the version store", "err", err)
		return k
	}
	k.store = st
	return k
}

// Close closes the version store, if open. A nil Keeper has none.
func (k *Keeper) Close() error {
	if k == nil || k.store == nil {
		return nil
	}
	return k.store.Close()
}

// Available reports whether the version store is open.
func (k *Keeper) Available() bool { return k != nil && k.store != nil }

// StoreBytes is the size of what the store holds.
func (k *Keeper) StoreBytes() int64 {
	if !k.Available() {
		return 0
	}
	return k.store.Usage().Bytes
}

// JobFor is the job for the keeper when the index at a path goes from old
// (when had) to rec: a chunked file version that is new there; fresh when
// it replaced no file.
func JobFor(old vaultdb.Record, had bool, rec vaultdb.Record) (Job, bool) {
	if rec.Kind != entry.KindFile || len(rec.Chunks) == 0 || (had && old.Version == rec.Version) {
		return Job{}, false
	}
	return Job{ID: rec.Version, Fresh: !had || old.Kind != entry.KindFile}, true
}

// Enqueue asks the keeper to copy a version now current at its path. It
// never blocks.
func (k *Keeper) Enqueue(j Job) {
	if !k.Available() || j.ID == (entry.VersionID{}) {
		return
	}
	select {
	case k.queue <- j:
	default:
		k.dropped.Add(1)
	}
}

// Flush waits until the keeper has handled every version queued before
// the call (or ctx ends), so that a test sees a settled store.
func (k *Keeper) Flush(ctx context.Context) error {
	if !k.Available() {
		return nil
	}
	done := make(chan struct{})
	select {
	case k.queue <- Job{done: done}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// KeepBeforeReplace copies the version on disk at a path (cur, when had)
// into the store before the agent replaces or deletes it. It is quick
// when the store already has it.
func (k *Keeper) KeepBeforeReplace(cur vaultdb.Record, had bool) {
	if !had || cur.Kind != entry.KindFile || len(cur.Chunks) == 0 {
		return
	}
	k.KeepNow(Job{ID: cur.Version})
}

// KeepNow copies one version's chunks into the store, when the policy
// admits it.
func (k *Keeper) KeepNow(j Job) { k.keep(j, k.cfg.Vault.Envelope, false) }

// KeepSole copies version id into the store from envelope (which
// re-creates its chunks from bytes the caller holds, not from the
// folder), whatever the budget says: the caller's bytes are this
// device's only copy of content other devices may still need, such as a
// merge it just wrote, which an editor's save can replace on disk before
// any peer fetched it (docs/sync.md, "Saves racing an apply"). Only a
// disk short of space, or no store, keeps it out. The prune then treats
// it as any kept version (with versions off, whose budget is 0, the next
// prune drops it).
func (k *Keeper) KeepSole(id entry.VersionID, envelope func(cid.Cid) ([]byte, error)) {
	k.keep(Job{ID: id}, envelope, true)
}

// keep copies j's version into the store, reading its chunks through
// envelope; sole skips the budget rules (KeepSole).
func (k *Keeper) keep(j Job, envelope func(cid.Cid) ([]byte, error), sole bool) {
	if !k.Available() || j.ID == (entry.VersionID{}) {
		return
	}
	key := Key(j.ID)
	if k.store.Has(key) {
		return // the common case before a replace: no wait for another keep
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.store.Has(key) {
		return
	}
	ver, ok := k.cfg.Vault.Version(j.ID)
	if !ok || ver.Kind != entry.KindFile || len(ver.Chunks) == 0 {
		return
	}
	budget := k.policy.Load().BudgetFor(k.cfg.Vault.FolderBytes())
	u := k.store.Usage()
	switch {
	case sole:
	case int64(ver.Size) > budget/4,
		j.Fresh && u.Bytes+int64(ver.Size) > budget:
		k.skipped.Add(1)
		return
	}
	if free := k.cfg.Vault.DiskFree(); free > 0 && free < LowDisk+int64(ver.Size) {
		k.skipped.Add(1)
		return
	}
	refs := make([]versions.ChunkRef, len(ver.Chunks))
	for i, c := range ver.Chunks {
		refs[i] = versions.ChunkRef{CID: c.CID, Size: c.Size}
	}
	added, err := k.store.Keep(versions.Kept{ID: key, Path: ver.Path, Size: ver.Size, Chunks: refs}, envelope)
	switch {
	case errors.Is(err, versions.ErrContent):
		k.skipped.Add(1) // edited or gone again before it could be read
		return
	case err != nil:
		k.failed.Add(1)
		k.log.Warn("keeping a local version", "path", ver.Path, "err", err)
		return
	}
	k.kept.Add(1)
	k.keptBytes.Add(added)
	if k.sincePrune.Add(1) >= pruneEvery || u.Bytes+added > budget {
		select {
		case k.prune <- struct{}{}:
		default:
		}
	}
}

// Run copies queued versions into the store, prunes it, and fetches
// damaged chunks again, until ctx ends. The vault's Run owns it.
func (k *Keeper) Run(ctx context.Context) {
	if !k.Available() {
		return
	}
	tick := time.NewTicker(time.Hour)
	defer tick.Stop()
	var damaged []cid.Cid // dropped by the scrub, not fetched again yet
	for {
		select {
		case <-ctx.Done():
			return
		case cs := <-k.damaged:
			damaged = k.repair(ctx, append(damaged, cs...))
		case j := <-k.queue:
			if j.done != nil {
				close(j.done)
				continue
			}
			k.KeepNow(j)
		case <-k.prune:
			_, _ = k.Prune(ctx)
		case <-tick.C:
			_, _ = k.Prune(ctx)
			damaged = k.repair(ctx, damaged)
		}
	}
}

// repair fetches chunks the scrub dropped from the store again from the
// connected members and stores them; it returns those no member sent
// (tried again at the next tick).
func (k *Keeper) repair(ctx context.Context, cs []cid.Cid) []cid.Cid {
	if len(cs) == 0 {
		return nil
	}
	if len(cs) > maxDamaged {
		cs = cs[len(cs)-maxDamaged:]
	}
	var mu sync.Mutex
	got := map[cid.Cid]bool{}
	_ = k.cfg.Vault.Fetch(ctx, cs, func(c cid.Cid, env []byte) error {
		if err := k.store.PutChunk(c, env); err != nil {
			return err
		}
		mu.Lock()
		got[c] = true
		mu.Unlock()
		return nil
	})
	var left []cid.Cid
	for _, c := range cs {
		if !got[c] {
			left = append(left, c)
		}
	}
	if n := len(cs) - len(left); n > 0 {
		k.log.Info("version store: damaged chunks fetched again", "chunks", n, "still missing", len(left))
	}
	return left
}

// Scrub re-verifies up to maxBytes of the store (the background scrub's
// share), or all of it when maxBytes is 0. It returns the bytes read and
// how many chunks were found damaged.
func (k *Keeper) Scrub(ctx context.Context, maxBytes int64) (int64, int, error) {
	if !k.Available() {
		return 0, 0, nil
	}
	var res pack.ScrubStepResult
	var err error
	if maxBytes == 0 {
		res, err = k.store.ScrubPass(ctx, 0)
	} else {
		res, err = k.store.ScrubStep(maxBytes)
	}
	if k.cfg.OnScrubbed != nil {
		k.cfg.OnScrubbed(res.Bytes)
	}
	return res.Bytes, len(res.Corrupt), err
}

// Prune applies the policy to the store: versions current in the folder
// stay.
func (k *Keeper) Prune(ctx context.Context) (versions.PruneResult, error) {
	if !k.Available() {
		return versions.PruneResult{}, nil
	}
	k.sincePrune.Store(0)
	folderBytes := k.cfg.Vault.FolderBytes()
	current := map[string]bool{}
	k.cfg.Vault.Current(func(id entry.VersionID) { current[string(Key(id))] = true })
	p := k.policy.Load()
	res, err := k.store.Prune(ctx, versions.Policy{KeepAll: KeepAll(*p), Budget: p.BudgetFor(folderBytes)}, func(id []byte) bool { return current[string(id)] })
	if err != nil && ctx.Err() == nil {
		k.log.Warn("pruning local versions", "err", err)
	}
	if res.Dropped > 0 {
		k.log.Info("local versions pruned", "dropped", res.Dropped, "retained", res.Retained, "bytes", res.Bytes)
	}
	return res, err
}

// Envelope returns a chunk's envelope from the store (an error wrapping
// ErrNotKept when it does not hold it).
func (k *Keeper) Envelope(c cid.Cid) ([]byte, error) {
	if !k.Available() {
		return nil, ErrNotKept
	}
	env, err := k.store.Chunk(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotKept, err)
	}
	return env, nil
}

// Has reports whether the store holds chunk c.
func (k *Keeper) Has(c cid.Cid) bool {
	return k.Available() && k.store.HasChunk(c)
}

// SetPolicy applies a new policy from now on (the caller stores it, then
// prunes).
func (k *Keeper) SetPolicy(p api.VersionPolicy) { k.policy.Store(&p) }

// Info is what `weft folder versions` shows of the keeper.
func (k *Keeper) Info() api.VersionsInfo {
	p := *k.policy.Load()
	info := api.VersionsInfo{Folder: k.cfg.Folder, Policy: p, BudgetBytes: p.BudgetFor(k.cfg.Vault.FolderBytes()),
		Kept: k.kept.Load(), Skipped: k.skipped.Load(), Failed: k.failed.Load(), Dropped: k.dropped.Load()}
	if k.store != nil {
		u := k.store.Usage()
		info.Available, info.Versions, info.Bytes, info.BytesOnDisk = true, u.Versions, u.Bytes, u.BytesOnDisk
	}
	return info
}
