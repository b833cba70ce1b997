package node

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
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

// Local versions (docs/history.md, "Local versions"): every device keeps
// the content of the file versions it holds in a version store in its
// home (store/versions), so that what the user or a peer replaces or
// deletes can be restored with no relay and no other device online.
//
// What is kept, and when:
//   - a version that becomes current here (recorded from a local edit, or
//     applied from a peer) is queued to the keeper, which copies its
//     chunks from the folder into the store, unless the store is over
//     budget and the version replaced nothing (the first scan or first
//     sync of a large folder does not copy the whole folder);
//   - before weft itself replaces or deletes a file (a peer's version, a
//     resolution, a deletion), the version on disk is copied first if the
//     store lacks it, synchronously: what sync takes away is always kept.
//
// Inline versions (4 KiB or less) are in the log itself and need no copy.
// A version larger than a quarter of the budget is not kept (one large
// file would push every other version out); history then says where its
// content is, truthfully. Keeping never blocks sync: a failure (a full
// disk) is logged and counted, and the version is simply not kept.

// metaVersionPolicy holds the folder's policy (JSON), when the user set one.
const metaVersionPolicy = "version-policy"

const (
	// versionLowDisk: below this much free space on the home's disk the
	// keeper keeps nothing new (sync needs the space more).
	versionLowDisk = 1 << 30
)

// keepAll is how long p keeps every version before the daily thinning.
func keepAll(p api.VersionPolicy) time.Duration {
	if p.KeepAllDays == 0 {
		return versions.DefaultKeepAll
	}
	return time.Duration(p.KeepAllDays) * 24 * time.Hour
}

func loadVersionPolicy(db *vaultdb.DB) (api.VersionPolicy, error) {
	var p api.VersionPolicy
	b, ok, err := db.Meta(metaVersionPolicy)
	if err != nil || !ok {
		return p, err
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return api.VersionPolicy{}, fmt.Errorf("reading the version policy: %w", err)
	}
	return p, p.Validate()
}

// keeper is a vault's version keeping: the store, the queue of versions to
// copy into it and its counters. The keep loop (started by startVault)
// owns the queue's receiving end; keepNow is called synchronously by the
// applier's goroutine.
type keeper struct {
	store  *versions.Store // nil when the store could not be opened
	policy atomic.Pointer[api.VersionPolicy]
	queue  chan keepJob
	prune  chan struct{} // buffer 1: a prune is wanted
	// damaged carries chunks the scrub (or a read) dropped from the store,
	// for the keep loop to fetch again from a peer.
	damaged chan []cid.Cid

	// mu serialises keeping (the keep loop and keepBeforeReplace), so a
	// version is copied and named once.
	mu sync.Mutex

	kept, keptBytes, skipped, failed, dropped atomic.Int64
	sincePrune                                atomic.Int64
}

// keepJob is a version to copy into the store.
type keepJob struct {
	id    entry.VersionID
	fresh bool // it replaced no file version at its path
	// done, when set, makes the job a barrier: the keep loop closes it
	// once every job queued before it is done (keeper.flush).
	done chan struct{}
}

// keepQueue bounds the versions waiting for the keeper; beyond it a
// version is not kept (counted as dropped) rather than slowing sync.
const keepQueue = 4096

// pruneEvery is how many kept versions trigger a prune; the keep loop
// also prunes hourly (the 30-day window moves with the clock).
const pruneEvery = 64

// versionKey is a version's key in the store: author, seq (big endian),
// index (big endian).
func versionKey(id entry.VersionID) []byte {
	b := make([]byte, 0, len(id.Author)+12)
	b = append(b, id.Author[:]...)
	b = binary.BigEndian.AppendUint64(b, id.Seq)
	return binary.BigEndian.AppendUint32(b, id.Index)
}

// openKeeper opens the vault's version store; an error leaves the vault
// without one (logged: sync does not depend on it).
func (v *vault) openKeeper() {
	v.keep = &keeper{queue: make(chan keepJob, keepQueue), prune: make(chan struct{}, 1), damaged: make(chan []cid.Cid, 16)}
	p, err := loadVersionPolicy(v.db)
	if err != nil {
		v.log.Warn("using the default version policy", "err", err)
	}
	v.keep.policy.Store(&p)
	st, err := versions.Open(versions.Config{
		Dir: filepath.Join(v.cfg.Dir, "versions"), Logger: v.log, Now: v.n.now,
		OnQuarantine: func(cs []cid.Cid, _ pack.FoundBy) {
			v.log.Warn("version store: damaged chunks dropped; fetching them again from the vault's devices", "chunks", len(cs))
			v.n.stats.versionCorrupt.Add(uint64(len(cs)))
			select {
			case v.keep.damaged <- cs:
			default: // the loop is behind; the next scrub pass finds the rest
			}
		},
	})
	if err != nil {
		v.log.Error("local versions are off: opening the version store", "err", err)
		return
	}
	v.keep.store = st
}

// close closes the version store, if open. A nil keeper has none.
func (k *keeper) close() error {
	if k == nil || k.store == nil {
		return nil
	}
	return k.store.Close()
}

// keepJobFor is the job for the keeper when the index at a path goes from
// old (when had) to rec: a chunked file version that is new there; fresh
// when it replaced no file.
func keepJobFor(old vaultdb.Record, had bool, rec vaultdb.Record) (keepJob, bool) {
	if rec.Kind != entry.KindFile || len(rec.Chunks) == 0 || (had && old.Version == rec.Version) {
		return keepJob{}, false
	}
	return keepJob{id: rec.Version, fresh: !had || old.Kind != entry.KindFile}, true
}

// enqueue asks the keeper to copy a version now current at its path. It
// never blocks.
func (k *keeper) enqueue(j keepJob) {
	if k == nil || k.store == nil || j.id == (entry.VersionID{}) {
		return
	}
	select {
	case k.queue <- j:
	default:
		k.dropped.Add(1)
	}
}

// flush waits until the keeper has handled every version queued before
// the call (or ctx ends), so that a test sees a settled store.
func (k *keeper) flush(ctx context.Context) error {
	if k == nil || k.store == nil {
		return nil
	}
	done := make(chan struct{})
	select {
	case k.queue <- keepJob{done: done}:
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

// keepBeforeReplace copies the version on disk at a path (cur, when had)
// into the store before weft replaces or deletes it. It is quick when the
// keeper already has it.
func (v *vault) keepBeforeReplace(cur vaultdb.Record, had bool) {
	if !had || cur.Kind != entry.KindFile || len(cur.Chunks) == 0 {
		return
	}
	v.keepNow(keepJob{id: cur.Version})
}

// keepNow copies one version's chunks into the store, when the policy
// admits it.
func (v *vault) keepNow(j keepJob) {
	k := v.keep
	if k == nil || k.store == nil || j.id == (entry.VersionID{}) {
		return
	}
	key := versionKey(j.id)
	if k.store.Has(key) {
		return // the common case before a replace: no wait for another keep
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.store.Has(key) {
		return
	}
	v.mu.Lock()
	ver, ok := v.bodies[j.id]
	folderBytes := v.index.Bytes()
	v.mu.Unlock()
	if !ok || ver.Kind != entry.KindFile || len(ver.Chunks) == 0 {
		return
	}
	budget := k.policy.Load().BudgetFor(folderBytes)
	u := k.store.Usage()
	switch {
	case int64(ver.Size) > budget/4,
		j.fresh && u.Bytes+int64(ver.Size) > budget:
		k.skipped.Add(1)
		return
	}
	if free, _ := diskSpace(v.cfg.Dir); free > 0 && free < versionLowDisk+int64(ver.Size) {
		k.skipped.Add(1)
		return
	}
	refs := make([]versions.ChunkRef, len(ver.Chunks))
	for i, c := range ver.Chunks {
		refs[i] = versions.ChunkRef{CID: c.CID, Size: c.Size}
	}
	added, err := k.store.Keep(versions.Kept{ID: key, Path: ver.Path, Size: ver.Size, Chunks: refs}, v.chunks.envelope)
	switch {
	case errors.Is(err, versions.ErrContent):
		k.skipped.Add(1) // edited or gone again before it could be read
		return
	case err != nil:
		k.failed.Add(1)
		v.log.Warn("keeping a local version", "path", ver.Path, "err", err)
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

// keepLoop copies queued versions into the store and prunes it, until ctx
// ends.
func (v *vault) keepLoop(ctx context.Context) {
	k := v.keep
	if k == nil || k.store == nil {
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
			damaged = v.repairKept(ctx, append(damaged, cs...))
		case j := <-k.queue:
			if j.done != nil {
				close(j.done)
				continue
			}
			v.keepNow(j)
		case <-k.prune:
			v.pruneVersions(ctx)
		case <-tick.C:
			v.pruneVersions(ctx)
			damaged = v.repairKept(ctx, damaged)
		}
	}
}

// maxDamaged bounds the chunks waiting to be fetched again; beyond it the
// oldest are forgotten (their versions read as not kept, truthfully).
const maxDamaged = 4096

// repairKept fetches chunks the scrub dropped from the version store
// again from the connected members and stores them; it returns those no
// member sent (tried again at the next tick).
func (v *vault) repairKept(ctx context.Context, cs []cid.Cid) []cid.Cid {
	if len(cs) == 0 {
		return nil
	}
	if len(cs) > maxDamaged {
		cs = cs[len(cs)-maxDamaged:]
	}
	var mu sync.Mutex
	got := map[cid.Cid]bool{}
	_ = v.fetchFromPeers(ctx, cs, func(c cid.Cid, env []byte) error {
		if err := v.keep.store.PutChunk(c, env); err != nil {
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
		v.log.Info("version store: damaged chunks fetched again", "chunks", n, "still missing", len(left))
	}
	return left
}

// scrubKept re-verifies up to maxBytes of the version store (the
// background scrub's share), or all of it when maxBytes is 0.
func (v *vault) scrubKept(ctx context.Context, maxBytes int64) (int64, int, error) {
	k := v.keep
	if k == nil || k.store == nil {
		return 0, 0, nil
	}
	var res pack.ScrubStepResult
	var err error
	if maxBytes == 0 {
		res, err = k.store.ScrubPass(ctx, 0)
	} else {
		res, err = k.store.ScrubStep(maxBytes)
	}
	v.n.stats.versionScrubBytes.Add(uint64(res.Bytes))
	return res.Bytes, len(res.Corrupt), err
}

// pruneVersions applies the policy to the store.
func (v *vault) pruneVersions(ctx context.Context) (versions.PruneResult, error) {
	k := v.keep
	if k == nil || k.store == nil {
		return versions.PruneResult{}, nil
	}
	k.sincePrune.Store(0)
	v.mu.Lock()
	folderBytes := v.index.Bytes()
	current := make(map[string]bool, v.index.Len())
	for _, r := range v.index.All() {
		if r.Kind == entry.KindFile && len(r.Chunks) > 0 {
			current[string(versionKey(r.Version))] = true
		}
	}
	v.mu.Unlock()
	p := k.policy.Load()
	res, err := k.store.Prune(ctx, versions.Policy{KeepAll: keepAll(*p), Budget: p.BudgetFor(folderBytes)}, func(id []byte) bool { return current[string(id)] })
	if err != nil && ctx.Err() == nil {
		v.log.Warn("pruning local versions", "err", err)
	}
	if res.Dropped > 0 {
		v.log.Info("local versions pruned", "dropped", res.Dropped, "retained", res.Retained, "bytes", res.Bytes)
	}
	return res, err
}

// envelope returns a chunk's envelope from the version store.
func (k *keeper) envelope(c cid.Cid) ([]byte, error) {
	if k == nil || k.store == nil {
		return nil, errNotLocal
	}
	env, err := k.store.Chunk(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotLocal, err)
	}
	return env, nil
}

// has reports whether the version store holds chunk c.
func (k *keeper) has(c cid.Cid) bool {
	return k != nil && k.store != nil && k.store.HasChunk(c)
}

func (v *vault) versionsInfo() api.VersionsInfo {
	k := v.keep
	v.mu.Lock()
	folderBytes := v.index.Bytes()
	v.mu.Unlock()
	p := *k.policy.Load()
	info := api.VersionsInfo{Folder: v.cfg.Folder, Policy: p, BudgetBytes: p.BudgetFor(folderBytes),
		Kept: k.kept.Load(), Skipped: k.skipped.Load(), Failed: k.failed.Load(), Dropped: k.dropped.Load()}
	if k.store != nil {
		u := k.store.Usage()
		info.Available, info.Versions, info.Bytes, info.BytesOnDisk = true, u.Versions, u.Bytes, u.BytesOnDisk
	}
	return info
}

// Versions reports every folder's local versions.
func (n *Node) Versions() []api.VersionsInfo {
	out := []api.VersionsInfo{}
	for _, v := range n.vaultsNow() {
		out = append(out, v.versionsInfo())
	}
	return out
}

// SetVersionPolicy stores a folder's version policy and applies it now (a
// smaller budget drops the oldest versions at once).
func (n *Node) SetVersionPolicy(ctx context.Context, folder string, p api.VersionPolicy) (api.VersionsInfo, error) {
	v, err := n.vaultOfFolder(folder)
	if err != nil {
		return api.VersionsInfo{}, err
	}
	if err := p.Validate(); err != nil {
		return api.VersionsInfo{}, fmt.Errorf("%w: %v", errBadDecision, err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return api.VersionsInfo{}, err
	}
	u := &vaultdb.Update{}
	u.SetMeta(metaVersionPolicy, b)
	if err := v.db.Commit(u); err != nil {
		return api.VersionsInfo{}, fmt.Errorf("storing the version policy: %w", err)
	}
	v.keep.policy.Store(&p)
	if _, err := v.pruneVersions(ctx); err != nil {
		return v.versionsInfo(), err
	}
	return v.versionsInfo(), nil
}
