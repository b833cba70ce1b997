package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/store/vaultdb"
)

// The folder guard: a folder is scanned and written only while its root
// is the folder this vault syncs. Its marker (folder.MarkerPath) names the
// vault; a folder whose marker is gone, names another vault, or that
// cannot be read is stopped before anything is scanned or applied, and
// resumes by itself once it is back (docs/folder.md, "The folder marker").
// Without it, an unmounted drive or a moved folder looked like a user who
// deleted every file, and the deletions reached every device.

// errFolderStopped: the folder guard has stopped the folder; nothing was
// scanned or applied. Callers log nothing more: the guard logged why once.
var errFolderStopped = api.Classified(api.ErrConflict, "folder stopped")

// metaMarked is set in the vault database once a marker was written for
// the folder: from then on a missing marker stops the folder. A vault
// from before markers existed gets one written at its first check, when
// its folder still looks like itself (see checkFolder).
const metaMarked = "folder-marked"

// guardRecheck is how often a stopped folder is checked again, so that
// putting it back resumes it without a restart.
const guardRecheck = 2 * time.Second

// folderStop says why a folder is stopped; the zero value means it runs.
type folderStop struct {
	code    string
	message string
	since   time.Time
}

// stopped returns the folder's stop, if any.
func (v *vault) stopped() (folderStop, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.stop, v.stop.code != ""
}

// guard checks the folder and returns errFolderStopped (wrapped with the
// reason) when it must not be scanned or written. It records the outcome
// for status, and logs and publishes a change of it once. resumed reports
// a stopped folder that passes again: the caller rescans it.
func (v *vault) guard() (resumed bool, err error) {
	code, msg := v.checkFolder()
	v.mu.Lock()
	was := v.stop
	if code == "" {
		v.stop = folderStop{}
	} else if was.code != code || was.message != msg {
		since := v.n.now()
		if was.code != "" {
			since = was.since
		}
		v.stop = folderStop{code: code, message: msg, since: since}
	}
	v.mu.Unlock()
	switch {
	case code == "" && was.code != "":
		v.log.Info("folder is back: syncing it again", "was", was.code)
		v.n.events.Publish(api.Event{Type: api.EventFolderResumed, Folder: v.cfg.Folder})
		select {
		case v.resumed <- struct{}{}:
		default: // a resume is already signalled
		}
		return true, nil
	case code == "":
		return false, nil
	case was.code != code:
		v.log.Error("folder stopped: nothing is scanned or applied until it is back", "code", code, "reason", msg)
		v.n.events.Publish(api.Event{Type: api.EventFolderStopped, Folder: v.cfg.Folder, Kind: code, Error: msg})
	}
	return false, fmt.Errorf("%w: %s", errFolderStopped, msg)
}

// checkFolder looks at the folder's root and marker and returns an error
// code and message, or "" when the folder may be synced. It writes the
// marker of a folder that has never had one and still looks like itself.
func (v *vault) checkFolder() (code, msg string) {
	dir := v.cfg.Folder
	if o, ok := v.fs.(*folder.OSFS); ok {
		info, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return api.CodeMarkerMissing, fmt.Sprintf("the folder %s is gone (moved, deleted, or on a drive that is not mounted); put it back, or see `weft folder reset`", dir)
		case err != nil:
			return api.CodeUnreadable, fmt.Sprintf("the folder %s cannot be read: %v", dir, err)
		case !info.IsDir():
			return api.CodeMarkerMissing, fmt.Sprintf("%s is not a directory any more; put the folder back, or see `weft folder reset`", dir)
		}
		if same, err := o.RootIs(info); err != nil || !same {
			// The directory weft holds open is not the one at the path
			// (the folder was moved away, or replaced): follow the path,
			// whose marker decides below.
			if err := o.Reopen(); err != nil {
				return api.CodeUnreadable, fmt.Sprintf("the folder %s cannot be opened: %v", dir, err)
			}
		}
	}
	id, err := folder.ReadMarker(v.fs)
	switch {
	case err == nil && id == v.id.String():
		return "", ""
	case err == nil:
		return api.CodeMarkerForeign, fmt.Sprintf("the folder %s belongs to another vault (its marker %s names vault %s); weft will not mix two vaults' files", dir, folder.MarkerPath, shortID(id))
	case errors.Is(err, folder.ErrBadMarker):
		return api.CodeMarkerForeign, fmt.Sprintf("the folder marker %s/%s is damaged (%v); see `weft folder reset`", dir, folder.MarkerPath, err)
	case !errors.Is(err, folder.ErrNoMarker):
		return api.CodeUnreadable, fmt.Sprintf("the folder %s cannot be read: %v", dir, err)
	}
	marked, err := v.markedBefore()
	if err != nil {
		return api.CodeUnreadable, fmt.Sprintf("reading the vault database: %v", err)
	}
	if marked {
		return api.CodeMarkerMissing, fmt.Sprintf("the folder marker %s is missing from %s: the folder looks replaced (an unmounted drive, an empty folder put in its place); put the real folder back, or see `weft folder reset`", folder.MarkerPath, dir)
	}
	// Never marked: a new vault, or one from before markers. Mark it
	// unless its index holds files and the root holds nothing at all.
	v.mu.Lock()
	files := v.index.Files()
	if files == 0 && v.logHoldsFilesLocked() {
		// A rebuilt index lost its records (and the marked flag with
		// them), but the log says the folder holds files.
		files = -1
	}
	v.mu.Unlock()
	if files != 0 {
		empty, err := rootEmpty(v.fs)
		if err != nil {
			return api.CodeUnreadable, fmt.Sprintf("the folder %s cannot be read: %v", dir, err)
		}
		if empty {
			seen := fmt.Sprintf("weft last saw %d files in it", files)
			if files < 0 {
				seen = "the vault's log holds files for it"
			}
			return api.CodeMarkerMissing, fmt.Sprintf("the folder %s is empty but %s (an unmounted drive, an empty folder put in its place); put the real folder back, or see `weft folder reset`", dir, seen)
		}
	}
	if err := v.markFolder(); err != nil {
		return api.CodeUnreadable, fmt.Sprintf("writing the folder marker in %s: %v", dir, err)
	}
	return "", ""
}

// logHoldsFilesLocked reports whether some path's heads include a file:
// the folder is not new. Asked only of a folder that has never been
// marked, once per check. v.mu must be held.
func (v *vault) logHoldsFilesLocked() bool {
	for _, p := range v.graph.Paths() {
		for _, h := range v.graph.Heads(p) {
			if h.Kind == protocol.KindFile {
				return true
			}
		}
	}
	return false
}

// markedBefore reports whether this vault's folder has had a marker.
func (v *vault) markedBefore() (bool, error) {
	_, ok, err := v.db.Meta(metaMarked)
	return ok, err
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

// rootEmpty reports whether the folder's root holds nothing but weft's
// own working directory.
func rootEmpty(fsys folder.FS) (bool, error) {
	ents, err := fsys.ReadDir("")
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		if e.Name != folder.WorkDir {
			return false, nil
		}
	}
	return true, nil
}

// shortID shortens a vault ID for a message.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return strings.TrimSpace(id)
}
