package relay

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/weftsync/weft/protocol/keys"
)

// VaultInfo is what `weft relay vaults` shows of one vault a relay serves.
type VaultInfo struct {
	Vault        string    `json:"vault"`
	BytesStored  int64     `json:"bytes_stored"`  // encrypted chunk bytes
	BytesOnDisk  int64     `json:"bytes_on_disk"` // pack files or objects, dead records included
	Chunks       int64     `json:"chunks"`
	Entries      uint64    `json:"entries"`
	Devices      int       `json:"devices"` // members enrolled
	LastActivity time.Time `json:"last_activity"`
	QuotaBytes   uint64    `json:"quota_bytes,omitempty"` // 0: none
	QuotaEntries uint64    `json:"quota_entries,omitempty"`
	QuotaFull    bool      `json:"quota_full"`
	Wanted       int       `json:"chunks_wanted"` // referenced and not yet fetched
}

// touch records activity on the replica: an entry or chunk stored, a
// stream served.
func (r *replica) touch() { r.active.Store(time.Now().UnixNano()) }

// info reports the replica for VaultInfo.
func (r *replica) info() VaultInfo {
	ps := r.chunks.Stats()
	st := r.status()
	r.mu.Lock()
	devices := len(r.state.Members())
	wanted := r.wanted.len()
	r.mu.Unlock()
	return VaultInfo{
		Vault: r.id.String(), BytesStored: ps.BytesStored, BytesOnDisk: ps.BytesOnDisk, Chunks: ps.Chunks,
		Entries: st.Entries, Devices: devices, LastActivity: time.Unix(0, r.active.Load()).UTC(),
		QuotaBytes: st.BytesLimit, QuotaEntries: st.EntriesLimit, QuotaFull: st.Full, Wanted: wanted,
	}
}

// lastWritten is the newest modification time under dir: a stopped
// replica's last activity, and a started one's until it has some.
func lastWritten(dir string) int64 {
	var newest int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.ModTime().UnixNano() > newest {
			newest = fi.ModTime().UnixNano()
		}
		return nil
	})
	return newest
}

// Vaults reports every vault the running relay serves, by vault ID.
func (r *Relay) Vaults() []VaultInfo {
	r.mu.Lock()
	reps := make([]*replica, 0, len(r.vaults))
	for _, rep := range r.vaults {
		reps = append(reps, rep)
	}
	r.mu.Unlock()
	out := make([]VaultInfo, 0, len(reps))
	for _, rep := range reps {
		out = append(out, rep.info())
	}
	slices.SortFunc(out, func(a, b VaultInfo) int { return cmp.Compare(a.Vault, b.Vault) })
	return out
}

// serveVaults answers GET /admin/vaults with Vaults as JSON.
func (r *Relay) serveVaults(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(r.Vaults())
}

// VaultsInHome reports every vault of a stopped relay's home (the running
// relay holds its stores' locks: ask it through its metrics address). The
// quota shown is quota, the one the relay runs with.
func VaultsInHome(ctx context.Context, home string, quota Quota, stores ChunkStores, log *slog.Logger) ([]VaultInfo, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if stores == nil {
		stores = PackChunks
	}
	ids, err := replicaIDs(home)
	if err != nil {
		return nil, err
	}
	var out []VaultInfo
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		rep, err := openReplica(home, id, quota, stores, log, nil)
		if err != nil {
			return out, fmt.Errorf("opening vault %s (is the relay running? ask it with --metrics): %w", id, err)
		}
		out = append(out, rep.info())
		rep.close()
	}
	return out, nil
}

// replicaIDs lists the vaults with a replica in home.
func replicaIDs(home string) ([]keys.VaultID, error) {
	ents, err := os.ReadDir(filepath.Join(home, "replicas"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing replicas: %w", err)
	}
	var ids []keys.VaultID
	for _, e := range ents {
		b, err := hex.DecodeString(e.Name())
		if err != nil || len(b) != len(keys.VaultID{}) || !e.IsDir() {
			continue
		}
		var id keys.VaultID
		copy(id[:], b)
		ids = append(ids, id)
	}
	return ids, nil
}
