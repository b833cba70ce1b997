package node

import (
	"fmt"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/folderguard"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/store/vaultdb"
)

// The folder guard (node/folderguard): a folder is scanned and written
// only while its root is the folder this vault syncs (docs/folder.md, "The
// folder marker").

// errFolderStopped: the folder guard has stopped the folder.
var errFolderStopped = folderguard.ErrStopped

// metaMarked is set in the vault database once a marker was written for
// the folder: from then on a missing marker stops the folder. A vault
// from before markers existed gets one written at its first check, when
// its folder still looks like itself (folderguard.Check).
const metaMarked = "folder-marked"

// guard checks the folder and returns errFolderStopped (wrapped with the
// reason) when it must not be scanned or written. It records the outcome
// for status, and logs and publishes a change of it once. resumed reports
// a stopped folder that passes again: the caller rescans it.
func (v *vault) guard() (resumed bool, err error) {
	code, msg := folderguard.Check(guardedFolder{v})
	change, was := v.fguard.Note(code, msg, v.now())
	switch change {
	case folderguard.Resumed:
		v.log.Info("folder is back: syncing it again", "was", was.Code)
		v.events.Publish(api.Event{Type: api.EventFolderResumed, Folder: v.cfg.Folder})
		return true, nil
	case folderguard.Stopped:
		v.log.Error("folder stopped: nothing is scanned or applied until it is back", "code", code, "reason", msg)
		v.events.Publish(api.Event{Type: api.EventFolderStopped, Folder: v.cfg.Folder, Kind: code, Error: msg})
	}
	if code == "" {
		return false, nil
	}
	return false, fmt.Errorf("%w: %s", errFolderStopped, msg)
}

// guardedFolder is folderguard.Folder for one vault.
type guardedFolder struct{ v *vault }

func (g guardedFolder) Dir() string     { return g.v.cfg.Folder }
func (g guardedFolder) FS() folder.FS   { return g.v.fs }
func (g guardedFolder) VaultID() string { return g.v.id.String() }
func (g guardedFolder) Mark() error     { return g.v.markFolder() }

func (g guardedFolder) Marked() (bool, error) {
	_, ok, err := g.v.db.Meta(metaMarked)
	return ok, err
}

// Holds asks the log only of a folder that has never been marked, once
// per check.
func (g guardedFolder) Holds() int {
	v := g.v
	v.mu.Lock()
	defer v.mu.Unlock()
	if files := v.index.Files(); files != 0 {
		return files
	}
	for _, p := range v.view.Graph.Paths() {
		for _, h := range v.view.Graph.Heads(p) {
			if h.Kind == protocol.KindFile {
				return -1
			}
		}
	}
	return 0
}

// markFolder writes the folder's marker and records that it has one.
func (v *vault) markFolder() error {
	if err := folder.WriteMarker(v.fs, v.id.String()); err != nil {
		return err
	}
	u := &vaultdb.Update{}
	u.SetMeta(metaMarked, []byte{1})
	if err := v.db.Commit(u); err != nil {
		return fmt.Errorf("recording the folder marker: %w", err)
	}
	v.log.Info("wrote the folder marker", "marker", folder.MarkerPath)
	return nil
}
