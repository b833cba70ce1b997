package node

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/keeper"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// Local versions (docs/history.md, "Local versions"; node/keeper): every device keeps
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

// openKeeper opens the vault's version keeper (node/keeper); an error
// opening its store leaves the vault without local versions (logged: sync
// does not depend on them).
func (v *vault) openKeeper() {
	p, err := loadVersionPolicy(v.db)
	if err != nil {
		v.log.Warn("using the default version policy", "err", err)
	}
	v.keep = keeper.Open(keeper.Config{
		Dir: filepath.Join(v.cfg.Dir, "versions"), Folder: v.cfg.Folder, Vault: keptVault{v},
		Policy: p, Logger: v.log, Now: v.now,
		OnDamaged:  func(n int) { v.stats.versionCorrupt.Add(uint64(n)) },
		OnScrubbed: func(b int64) { v.stats.versionScrubBytes.Add(uint64(b)) },
	})
}

// keptVault is the vault as its keeper reads it.
type keptVault struct{ v *vault }

func (k keptVault) Version(id entry.VersionID) (entry.Version, bool) {
	k.v.mu.Lock()
	defer k.v.mu.Unlock()
	ver, ok := k.v.view.Body(id)
	return ver, ok
}

func (k keptVault) FolderBytes() int64 {
	k.v.mu.Lock()
	defer k.v.mu.Unlock()
	return k.v.index.Bytes()
}

func (k keptVault) Current(fn func(entry.VersionID)) {
	k.v.mu.Lock()
	var ids []entry.VersionID
	for _, r := range k.v.index.All() {
		if r.Kind == entry.KindFile && len(r.Chunks) > 0 {
			ids = append(ids, r.Version)
		}
	}
	k.v.mu.Unlock()
	for _, id := range ids {
		fn(id)
	}
}

func (k keptVault) Envelope(c cid.Cid) ([]byte, error) { return k.v.chunks.Envelope(c) }

func (k keptVault) Fetch(ctx context.Context, cids []cid.Cid, got func(cid.Cid, []byte) error) error {
	return k.v.fetchFromPeers(ctx, cids, got)
}

func (k keptVault) DiskFree() int64 {
	free, _ := diskSpace(k.v.cfg.Dir)
	return free
}

// Versions reports every folder's local versions.
func (b apiBackend) Versions() []api.VersionsInfo {
	out := []api.VersionsInfo{}
	for _, v := range b.vaultsNow() {
		out = append(out, v.keep.Info())
	}
	return out
}

// SetVersionPolicy stores a folder's version policy and applies it now (a
// smaller budget drops the oldest versions at once).
func (b apiBackend) SetVersionPolicy(ctx context.Context, folder string, p api.VersionPolicy) (api.VersionsInfo, error) {
	v, err := b.vaultOfFolder(folder)
	if err != nil {
		return api.VersionsInfo{}, err
	}
	if err := p.Validate(); err != nil {
		return api.VersionsInfo{}, fmt.Errorf("%w: %v", errBadDecision, err)
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return api.VersionsInfo{}, err
	}
	u := &vaultdb.Update{}
	u.SetMeta(metaVersionPolicy, raw)
	if err := v.db.Commit(u); err != nil {
		return api.VersionsInfo{}, fmt.Errorf("storing the version policy: %w", err)
	}
	v.keep.SetPolicy(p)
	if _, err := v.keep.Prune(ctx); err != nil {
		return v.keep.Info(), err
	}
	return v.keep.Info(), nil
}
