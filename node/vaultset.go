package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/home"
)

// vaultSet is the vaults a node serves. It is never changed in place: a
// vault added while the node runs (AddNewVaults) replaces the whole set,
// so the many readers (stream handlers, status, the loops) take one
// consistent set without a lock.
type vaultSet struct {
	list []*vault
	byID map[keys.VaultID]*vault
}

// with returns a set that also holds v.
func (s *vaultSet) with(v *vault) *vaultSet {
	out := &vaultSet{list: append(slices.Clip(s.list), v), byID: make(map[keys.VaultID]*vault, len(s.byID)+1)}
	for id, w := range s.byID {
		out.byID[id] = w
	}
	out.byID[v.id] = v
	return out
}

// running is what Run shares with vaults started after it: its context
// and the group it waits for before closing the vaults' databases. wg is
// nil while Run is not running (before it, or once it is stopping).
type running struct {
	mu      sync.Mutex // also serialises AddNewVaults
	ctx     context.Context
	wg      *sync.WaitGroup
	stopped bool // Run is stopping or stopped: no vault may be added
}

// errStopping refuses a vault added while the node shuts down: it would
// miss closeVaults and keep its database locked.
var errStopping = errors.New("the agent is stopping; the next `weft up` syncs the new vault")

// AddNewVaults opens the vaults of the home that the node does not serve
// yet (a folder `weft join` or `weft init` added while the agent runs)
// and, if Run is running, starts syncing them at once: the first scan,
// the watcher, pullers from connected members. It returns the folders it
// added. A vault that fails to open is skipped with its error; the
// others are still added.
func (n *Node) AddNewVaults() ([]string, error) {
	hvs, err := n.cfg.Home.Vaults()
	if errors.Is(err, home.ErrNoVaults) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	n.run.mu.Lock()
	if n.run.stopped {
		n.run.mu.Unlock()
		return nil, errStopping
	}
	var added []string
	var errs []error
	for _, hv := range hvs {
		if n.vault(hv.ID) != nil {
			continue
		}
		v, err := n.openVault(hv)
		if err != nil {
			errs = append(errs, fmt.Errorf("vault for %s: %w", hv.Folder, err))
			continue
		}
		n.vaults.Store(n.vaults.Load().with(v))
		if n.run.wg != nil {
			n.startVault(n.run.ctx, n.run.wg, v)
		}
		added = append(added, v.cfg.Folder)
		n.log.Info("vault added", "folder", v.cfg.Folder)
	}
	started := n.run.wg != nil
	n.run.mu.Unlock()
	if started && len(added) > 0 {
		// Pull the new vaults from members already connected for another
		// vault; syncWith starts only the pullers not running yet.
		for _, c := range n.host.Network().Conns() {
			n.onConnected(c)
		}
	}
	return added, errors.Join(errs...)
}
