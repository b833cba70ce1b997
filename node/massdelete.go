package node

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// The mass-delete guard (docs/folder.md, "Mass deletions"): a scan that
// would record, or peers' entries that would apply, the deletion of more of
// the folder than the folder's protocol.MassDeletePolicy allows records or
// applies none of those deletions. The folder is then `held` until the
// user accepts them (`weft deletions accept`) or rejects them (`weft
// deletions reject`, which brings the files back). So neither a user's
// slip, nor a broken disk that the folder guard did not catch, nor one
// broken member can empty every device; a hostile member with the vault's
// keys can mark its deletions confirmed (entry.DeletionConfirmed) and is
// slowed, not stopped (docs/security.md).
//
// What is held is derived again after a restart: held local deletions
// were never recorded, so the first scan finds them again; held incoming
// deletions are deletion heads not applied here, which the first
// reconcile judges again. Only the policy is stored.
//
// The rule and its state are engine.DeleteGuard's, one per vault under
// v.mu; this file feeds it scans and reconcile passes and tells the user.

// metaMassDelete holds the folder's policy (JSON), when the user set one.
const metaMassDelete = "mass-delete-policy"

// guardIndex is the vault's index and graph as the guard reads them
// (engine.GuardIndex). v.mu must be held while the guard uses it.
type guardIndex struct{ v *vault }

func (g guardIndex) Lookup(p string) (engine.Disk, bool) {
	r, ok := g.v.index.Get(p)
	if !ok {
		return engine.Disk{}, false
	}
	return diskOf(r), true
}

func (g guardIndex) Files() int                      { return g.v.index.Files() }
func (g guardIndex) DeletionConfirmed(p string) bool { return g.v.deletionConfirmedLocked(p) }
func (g guardIndex) WinnerIsDeletion(p string) bool  { return engine.IsDeletion(g.v.view.Graph, p) }
func (g guardIndex) Graph() *protocol.Graph          { return g.v.view.Graph }

// loadMassDeletePolicy reads the folder's stored policy (the default when
// none is stored).
func loadMassDeletePolicy(db *vaultdb.DB) (protocol.MassDeletePolicy, error) {
	var p protocol.MassDeletePolicy
	b, ok, err := db.Meta(metaMassDelete)
	if err != nil || !ok {
		return p, err
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("reading the mass-delete policy: %w", err)
	}
	return p, p.Validate()
}

// setMassDeletePolicy stores and applies a new policy.
func (v *vault) setMassDeletePolicy(p protocol.MassDeletePolicy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	u := &vaultdb.Update{}
	u.SetMeta(metaMassDelete, b)
	if err := v.db.Commit(u); err != nil {
		return fmt.Errorf("storing the mass-delete policy: %w", err)
	}
	v.engine.Post(func(e *engine.Engine) { e.Deletes.Policy = p })
	v.kick()
	return nil
}

// guardKind is a scan's kind of content in the guard's terms.
func guardKind(k folder.Kind) protocol.Kind {
	switch k {
	case folder.KindFile:
		return protocol.KindFile
	case folder.KindDir:
		return protocol.KindDir
	case folder.KindSymlink:
		return protocol.KindSymlink
	}
	return 0
}

// holdLocalDeletions takes out of a scan's changes the deletions the
// guard holds or defers (engine.DeleteGuard.JudgeLocal), and returns the
// rest, to be recorded, with the deletions the user accepted (to be
// recorded with entry.DeletionConfirmed).
func (v *vault) holdLocalDeletions(changes []folder.Change, mode scanMode, scanned []string) (kept []folder.Change, confirmed map[string]bool) {
	in := make([]engine.LocalChange, len(changes))
	for i, c := range changes {
		if c.Type == folder.Deleted {
			in[i] = engine.LocalChange{Path: c.Path, Deleted: true, Kind: guardKind(c.Old.Kind), Hash: c.Old.Hash}
		} else {
			in[i] = engine.LocalChange{Path: c.Path, Kind: guardKind(c.New.Kind), Hash: c.New.Hash}
		}
	}
	now := v.now()
	var verdict engine.LocalVerdict
	v.engine.Do(func(e *engine.Engine) {
		v.mu.Lock()
		defer v.mu.Unlock()
		verdict = e.Deletes.JudgeLocal(in, mode, scanned, guardIndex{v}, now)
	})
	if verdict.Ended {
		v.log.Info("held local deletions are gone: the files are back")
	}
	if verdict.Began {
		v.log.Warn("holding a mass deletion: nothing deleted is recorded until you decide (`weft deletions`)",
			"files", verdict.HeldFiles, "of", verdict.IndexFiles, "paths", verdict.Sample)
		v.events.Publish(api.Event{Type: api.EventDeletionsHeld, Folder: v.cfg.Folder, Kind: "local", Count: verdict.HeldFiles})
	}
	return withoutDeletions(changes, verdict.Withheld), verdict.Confirmed
}

// withoutDeletions returns changes without the deletions of paths in drop.
func withoutDeletions(changes []folder.Change, drop []string) []folder.Change {
	if len(drop) == 0 {
		return changes
	}
	skip := make(map[string]bool, len(drop))
	for _, p := range drop {
		skip[p] = true
	}
	kept := make([]folder.Change, 0, len(changes)-len(drop))
	for _, c := range changes {
		if !skip[c.Path] || c.Type != folder.Deleted {
			kept = append(kept, c)
		}
	}
	return kept
}

// deferredDeletions returns the paths whose deletion the watcher reported
// and the guard has not judged yet (once they stopped arriving).
func (v *vault) deferredDeletions() []string {
	now := v.now()
	var paths []string
	v.engine.Do(func(e *engine.Engine) { paths = e.Deletes.Deferred(now) })
	return paths
}

// noteIncomingHold tells the user when a reconcile pass began holding
// incoming deletions (the engine's Ready judged them with
// engine.DeleteGuard.JudgeIncoming).
func (v *vault) noteIncomingHold(verdict engine.IncomingVerdict) {
	if verdict.Began {
		v.log.Warn("holding deletions from peers: nothing is deleted here until you decide (`weft deletions`)",
			"files", verdict.HeldFiles, "of", verdict.IndexFiles, "paths", verdict.Sample)
		v.events.Publish(api.Event{Type: api.EventDeletionsHeld, Folder: v.cfg.Folder, Kind: "incoming", Count: verdict.HeldFiles})
	}
}

// deletionConfirmedLocked reports whether every head of path is a
// deletion its author's user confirmed past the mass-delete guard
// (entry.DeletionConfirmed). v.mu must be held.
func (v *vault) deletionConfirmedLocked(path string) bool {
	hs := v.view.Graph.Heads(path)
	for _, h := range hs {
		if h.Kind != protocol.KindDeletion || h.Mode&entry.DeletionConfirmed == 0 {
			return false
		}
	}
	return len(hs) > 0
}

// heldErrors are the errors[] items of held deletions, for status.
func (v *vault) heldErrors() []api.PathMessage {
	var local, incoming engine.Held
	v.engine.Do(func(e *engine.Engine) { local, incoming = e.Deletes.HeldLocal(), e.Deletes.HeldIncoming() })
	var out []api.PathMessage
	if h := local; len(h.Paths) > 0 {
		out = append(out, api.PathMessage{Code: api.CodeMassDelete, Reason: fmt.Sprintf(
			"%d files deleted here (%s) are held, not sent to other devices: that is more of the folder than its mass-delete guard allows; `weft deletions accept` records them, `weft deletions reject` brings the files back",
			h.Files, listPaths(h.Paths))})
	}
	if h := incoming; len(h.Paths) > 0 {
		out = append(out, api.PathMessage{Code: api.CodeMassDelete, Reason: fmt.Sprintf(
			"%d files deleted by another device (%s) are held, not deleted here: that is more of the folder than its mass-delete guard allows; `weft deletions accept` deletes them here, `weft deletions reject` keeps them and sends them back",
			h.Files, listPaths(h.Paths))})
	}
	return out
}

// listPaths names up to five paths.
func listPaths(ps []string) string {
	if len(ps) > 5 {
		return strings.Join(ps[:5], ", ") + fmt.Sprintf(" and %d more", len(ps)-5)
	}
	return strings.Join(ps, ", ")
}
