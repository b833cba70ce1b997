package node

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"slices"
	"sync"

	"github.com/libp2p/go-libp2p/core/network"

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
	// opening are the home's vaults not open yet at the start (New, or
	// Run with Config.OpenInRun): status shows them as "opening".
	opening []home.Vault
}

// with returns a set that also holds v, and no longer lists it as opening.
func (s *vaultSet) with(v *vault) *vaultSet {
	out := &vaultSet{list: append(slices.Clip(s.list), v), byID: make(map[keys.VaultID]*vault, len(s.byID)+1)}
	out.opening = slices.DeleteFunc(slices.Clone(s.opening), func(hv home.Vault) bool { return hv.ID == v.id })
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
	mu  sync.Mutex // also serialises AddNewVaults
	ctx context.Context
	// wg is Run's group while Run accepts work (nil before and after):
	// every goroutine the node starts joins it (goRun), so Run waits for
	// all of them before it closes the vaults.
	wg *sync.WaitGroup
	// vaultsStarted is set once Run has started the vaults it opened
	// with; AddNewVaults starts the ones added later itself.
	vaultsStarted bool
	stopped       bool // Run is stopping or stopped: no vault may be added
}

// goRun runs f in Run's group with Run's context, and reports whether it
// did: a node that is not running (not started yet, or stopping) starts
// nothing. It is how work that begins outside Run's own goroutines (a
// connection notice, a stream handler, a pairing, mDNS) gets an owner.
func (n *Node) goRun(f func(ctx context.Context)) bool {
	n.run.mu.Lock()
	defer n.run.mu.Unlock()
	if n.run.wg == nil {
		return false
	}
	ctx := n.run.ctx
	n.run.wg.Go(func() { pprof.Do(ctx, ownedLabels, f) })
	return true
}

// ownedLabels mark every goroutine goRun starts in a goroutine profile
// (weft=node), so an operator reading /debug/pprof/goroutine can tell the
// node's work from libp2p's, and a test can check that none outlives Run.
var ownedLabels = pprof.Labels("weft", "node")

// owned adapts a stream handler so that its work runs in Run's group
// (goRun) and sees Run's context: Run then waits for every stream it is
// answering before it closes the vaults. The end of Run's context resets
// the stream, so a handler blocked reading it returns and Run's wait ends.
// A stream that arrives while the node is not running is reset.
func (n *Node) owned(h func(ctx context.Context, s network.Stream)) network.StreamHandler {
	return func(s network.Stream) {
		done := make(chan struct{})
		if !n.goRun(func(ctx context.Context) {
			defer close(done)
			stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
			defer stop()
			h(ctx, s)
		}) {
			_ = s.Reset()
			return
		}
		<-done
	}
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
func (b apiBackend) AddNewVaults() ([]string, error) {
	hvs, err := b.cfg.Home.Vaults()
	if errors.Is(err, home.ErrNoVaults) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	b.run.mu.Lock()
	if b.run.stopped {
		b.run.mu.Unlock()
		return nil, errStopping
	}
	var added []string
	var errs []error
	for _, hv := range hvs {
		if b.vault(hv.ID) != nil {
			continue
		}
		v, err := b.openVault(hv)
		if err != nil {
			errs = append(errs, fmt.Errorf("vault for %s: %w", hv.Folder, err))
			continue
		}
		b.vaults.Store(b.vaults.Load().with(v))
		if b.run.vaultsStarted {
			b.startVault(b.run.ctx, b.run.wg, v)
		}
		added = append(added, v.cfg.Folder)
		b.log.Info("vault added", "folder", v.cfg.Folder)
	}
	started := b.run.vaultsStarted
	b.run.mu.Unlock()
	if started && len(added) > 0 {
		// Pull the new vaults from members already connected for another
		// vault; syncWith starts only the pullers not running yet.
		for _, c := range b.host.Network().Conns() {
			b.onConnected(c)
		}
	}
	return added, errors.Join(errs...)
}
