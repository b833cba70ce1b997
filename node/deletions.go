package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/store/vaultdb"
)

// What a user does about held deletions and stopped folders: `weft
// deletions`, `weft deletions accept|reject`, `weft folder reset` and
// `weft folder guard`, through the local API (docs/api.md).

// maxHeldListed bounds the paths one HeldDeletions lists.
const maxHeldListed = 1000

// Errors of the deletion and folder calls.
var (
	errNothingHeld   = api.Classified(api.ErrNotFound, "no deletions are held")
	errNoSuchFolder  = api.Classified(api.ErrNotFound, "not a synced folder")
	errPickFolder    = api.Classified(api.ErrInvalid, "several folders hold deletions; name one")
	errBadDecision   = api.Classified(api.ErrInvalid, "bad request")
	errFolderNotStop = api.Classified(api.ErrInvalid, "the folder is not stopped")
)

// Deletions lists every folder's held deletions.
func (b apiBackend) Deletions() []api.HeldDeletions {
	out := []api.HeldDeletions{}
	for _, v := range b.vaultsNow() {
		out = append(out, v.heldDeletions()...)
	}
	return out
}

func (v *vault) heldDeletions() []api.HeldDeletions {
	var local, incoming engine.Held
	var policy string
	v.engine.Do(func(e *engine.Engine) {
		local, incoming, policy = e.Deletes.HeldLocal(), e.Deletes.HeldIncoming(), e.Deletes.Policy.String()
	})
	var out []api.HeldDeletions
	list := func(dir string, h engine.Held) {
		if len(h.Paths) == 0 {
			return
		}
		out = append(out, api.HeldDeletions{
			Folder: v.cfg.Folder, Direction: dir, Files: h.Files, Total: len(h.Paths),
			Paths: h.Paths[:min(len(h.Paths), maxHeldListed)], Since: h.Since.UTC(), Policy: policy,
		})
	}
	list("local", local)
	list("incoming", incoming)
	return out
}

// DecideDeletions carries out the user's decision about a folder's held
// deletions, in both directions.
func (b apiBackend) DecideDeletions(ctx context.Context, req api.DeletionsRequest) (api.DeletionsResult, error) {
	res := api.DeletionsResult{Action: req.Action}
	if req.Action != "accept" && req.Action != "reject" {
		return res, fmt.Errorf("%w: action %q: want accept or reject", errBadDecision, req.Action)
	}
	v, err := b.heldVault(req.Folder)
	if err != nil {
		return res, err
	}
	res.Folder = v.cfg.Folder
	if _, err := v.guard(); err != nil {
		// An unmounted folder would make every held file look gone: a
		// reject would drop their records, an accept record nothing.
		return res, err
	}
	if req.Action == "accept" {
		res.Local, res.Incoming, err = v.acceptDeletions(ctx)
	} else {
		res.Local, res.Incoming, err = v.rejectDeletions(ctx)
	}
	if err == nil {
		v.log.Info("held deletions decided", "action", req.Action, "local", res.Local, "incoming", res.Incoming)
		b.events.Publish(api.Event{Type: api.EventDeletionsDecided, Folder: v.cfg.Folder, Kind: req.Action, Count: res.Local + res.Incoming})
	}
	return res, err
}

// heldVault picks the vault a deletion decision is about: the one whose
// folder is folder, or, when folder is empty, the only one holding
// deletions.
func (n *Node) heldVault(folder string) (*vault, error) {
	if folder != "" {
		return n.vaultOfFolder(folder)
	}
	var found *vault
	for _, v := range n.vaultsNow() {
		if len(v.heldDeletions()) == 0 {
			continue
		}
		if found != nil {
			return nil, errPickFolder
		}
		found = v
	}
	if found == nil {
		return nil, errNothingHeld
	}
	return found, nil
}

// vaultOfFolder returns the vault syncing folder (an absolute path, or
// one relative to the agent's working directory).
func (n *Node) vaultOfFolder(folder string) (*vault, error) {
	abs, err := filepath.Abs(folder)
	if err != nil {
		return nil, fmt.Errorf("folder %q: %w", folder, err)
	}
	for _, v := range n.vaultsNow() {
		if filepath.Clean(v.cfg.Folder) == abs {
			return v, nil
		}
	}
	return nil, fmt.Errorf("%s: %w", abs, errNoSuchFolder)
}

// acceptDeletions records the held local deletions and applies the held
// incoming ones.
func (v *vault) acceptDeletions(ctx context.Context) (local, incoming int, err error) {
	if v.tail.Hold(nil) {
		// Recording the deletions would fail, and the accept would be
		// spent with nothing recorded: refuse it now instead.
		return 0, 0, fmt.Errorf("%w; try again once this device has heard from another device or the relay", errAuthoringHeld)
	}
	var holding bool
	var localPaths, inPaths []string
	v.engine.Do(func(e *engine.Engine) {
		if holding = e.Deletes.Holding(); holding {
			localPaths, inPaths = e.Deletes.Accept()
			e.Step(engine.Touched{Paths: inPaths})
		}
	})
	if !holding {
		return 0, 0, errNothingHeld
	}
	local, incoming = len(localPaths), len(inPaths)
	v.kick()
	if len(localPaths) > 0 {
		if _, err := v.scan(ctx, localPaths); err != nil {
			return local, incoming, fmt.Errorf("recording the accepted deletions: %w", err)
		}
	}
	return local, incoming, nil
}

// rejectDeletions brings back the files whose deletion is held: a local
// deletion was never recorded, so the file's current version is written
// again (from the local chunks, peers or the relay); an incoming deletion
// is answered with a new version of what is on disk here, which
// supersedes the deletion on every device.
func (v *vault) rejectDeletions(ctx context.Context) (local, incoming int, err error) {
	v.scanMu.Lock()
	defer v.scanMu.Unlock()
	var holding bool
	var localPaths, inPaths []string
	v.engine.Do(func(e *engine.Engine) {
		if holding = e.Deletes.Holding(); holding {
			localPaths, inPaths = e.Deletes.HeldLocal().Paths, e.Deletes.HeldIncoming().Paths
		}
	})
	if !holding {
		return 0, 0, errNothingHeld
	}

	if len(localPaths) > 0 {
		n, err := v.rewriteDeleted(localPaths)
		if err != nil {
			return 0, 0, err
		}
		local = n
	}
	if len(inPaths) > 0 {
		if err := v.reassert(ctx, inPaths); err != nil {
			return local, 0, err
		}
		incoming = len(inPaths)
	}
	v.kick()
	return local, incoming, nil
}

// rewriteDeleted makes the applier write paths again: each one still
// absent on disk loses its index record, so the next reconcile finds its
// head not on disk and writes it, as for any version that arrives. It
// returns how many it handed over. v.scanMu must be held.
func (v *vault) rewriteDeleted(paths []string) (int, error) {
	var gone []string
	for _, p := range paths {
		if _, err := v.fs.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			gone = append(gone, p)
		}
	}
	u := &vaultdb.Update{}
	for _, p := range gone {
		u.DeleteIndex(p)
	}
	if err := v.db.Commit(u); err != nil {
		return 0, fmt.Errorf("bringing the deleted files back: %w", err)
	}
	v.mu.Lock()
	for _, p := range gone {
		v.setIndexLocked(p, vaultdb.Record{})
	}
	v.engine.Post(func(e *engine.Engine) {
		e.Step(engine.Touched{Paths: gone})
		e.Deletes.DropLocal()
	})
	v.mu.Unlock()
	return len(gone), nil
}

// reassert records what is on disk at paths as new versions that
// supersede every head there (the held deletions among them). v.scanMu
// must be held.
func (v *vault) reassert(ctx context.Context, paths []string) error {
	// The scan must see each path as new, so that it records its content
	// whole; the in-memory records come back if recording fails.
	v.mu.Lock()
	saved := make(map[string]vaultdb.Record, len(paths))
	for _, p := range paths {
		if r, ok := v.index.Get(p); ok {
			saved[p] = r
			v.setIndexLocked(p, vaultdb.Record{})
		}
	}
	v.mu.Unlock()
	if err := v.recordRestored(ctx, paths); err != nil {
		v.mu.Lock()
		for p, r := range saved {
			if _, ok := v.index.Get(p); !ok {
				v.setIndexLocked(p, r)
			}
		}
		v.mu.Unlock()
		return fmt.Errorf("keeping the files: %w", err)
	}
	v.engine.Do(func(e *engine.Engine) {
		v.mu.Lock()
		defer v.mu.Unlock()
		e.Deletes.DropIncoming(paths, guardIndex{v})
	})
	return nil
}

// ResetFolder makes a stopped folder the vault's folder as it is now: its
// marker is written, and syncing resumes. What differs from the index is
// then recorded as usual, so a folder reset while empty holds its
// deletions (the mass-delete guard) for `weft deletions`: reject fills it
// again from the other devices, accept empties the folder everywhere.
func (b apiBackend) ResetFolder(folder string) error {
	v, err := b.vaultOfFolder(folder)
	if err != nil {
		return err
	}
	st, stopped := v.fguard.Stopped()
	if !stopped {
		return fmt.Errorf("%s: %w", v.cfg.Folder, errFolderNotStop)
	}
	if st.Code == api.CodeUnreadable {
		return fmt.Errorf("%s cannot be read (%s); a reset cannot help until it can", v.cfg.Folder, st.Message)
	}
	if o, ok := v.fs.(interface{ Reopen() error }); ok {
		if err := o.Reopen(); err != nil {
			return err
		}
	}
	if err := v.markFolder(); err != nil {
		return err
	}
	v.log.Warn("folder reset by the user: syncing the folder as it is now", "was", st.Code)
	v.guard()
	return nil
}

// SetMassDeletePolicy changes a folder's mass-delete guard.
func (b apiBackend) SetMassDeletePolicy(folder string, p protocol.MassDeletePolicy) (protocol.MassDeletePolicy, error) {
	v, err := b.vaultOfFolder(folder)
	if err != nil {
		return p, err
	}
	if err := v.setMassDeletePolicy(p); err != nil {
		return p, err
	}
	return p.Effective(), nil
}
