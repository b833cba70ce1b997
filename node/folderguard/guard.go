package folderguard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
)

// ErrStopped: the guard has stopped the folder; nothing was scanned or
// applied. Callers log nothing more: the vault logged why once.
var ErrStopped = api.Classified(api.ErrConflict, "folder stopped")

// Recheck is how often a stopped folder is checked again, so that putting
// it back resumes it without a restart.
const Recheck = 2 * time.Second

// RecheckRunning is how often a running folder is checked while nothing
// else checks it: every scan and every reconcile pass checks first, so
// this only bounds how late status says that an idle folder went away (a
// check stats the root and reads the marker: most of an idle agent's
// system calls at Recheck).
const RecheckRunning = 10 * time.Second

// Stop says why a folder is stopped; the zero value means it runs.
type Stop struct {
	Code    string // api.CodeMarkerMissing, CodeMarkerForeign or CodeUnreadable
	Message string // what happened and what to do, for a person
	Since   time.Time
}

// Guard is one folder's stop. Its methods are safe for concurrent use.
type Guard struct {
	// resumed (buffer 1) is signalled when a stopped folder passes again.
	resumed chan struct{}

	mu   sync.Mutex
	stop Stop
}

// New returns the guard of a folder that runs.
func New() *Guard { return &Guard{resumed: make(chan struct{}, 1)} }

// Stopped returns the folder's stop, if any.
func (g *Guard) Stopped() (Stop, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stop, g.stop.Code != ""
}

// Resumed receives once after a stopped folder passed its check again:
// the vault then rescans and watches it again.
func (g *Guard) Resumed() <-chan struct{} { return g.resumed }

// Change is what a check changed.
type Change int

const (
	Same    Change = iota // nothing to say
	Resumed               // a stopped folder passes again
	Stopped               // the folder stopped, or for another reason than before
)

// Note records a check's outcome (Check's code and message; "" when the
// folder may be synced) at now, and returns what changed and the stop
// before it. A stop keeps its first Since while its reason only reworded.
func (g *Guard) Note(code, msg string, now time.Time) (Change, Stop) {
	g.mu.Lock()
	was := g.stop
	if code == "" {
		g.stop = Stop{}
	} else if was.Code != code || was.Message != msg {
		since := now
		if was.Code != "" {
			since = was.Since
		}
		g.stop = Stop{Code: code, Message: msg, Since: since}
	}
	g.mu.Unlock()
	switch {
	case code == "" && was.Code != "":
		select {
		case g.resumed <- struct{}{}:
		default: // a resume is already signalled
		}
		return Resumed, was
	case code != "" && was.Code != code:
		return Stopped, was
	}
	return Same, was
}

// Folder is what Check needs of a vault's folder.
type Folder interface {
	// Dir is the folder's path; FS reads it.
	Dir() string
	FS() folder.FS
	// VaultID is the vault's ID as its marker names it.
	VaultID() string
	// Marked reports whether this folder has had a marker.
	Marked() (bool, error)
	// Mark writes the folder's marker and records that it has one.
	Mark() error
	// Holds is how many files the vault last saw in the folder, or -1
	// when its index holds none but its log holds files (a rebuilt index
	// lost its records, and the marked flag with them).
	Holds() int
}

// Check looks at the folder's root and marker and returns an error code
// and message, or "" when the folder may be synced. It writes the marker
// of a folder that has never had one and still looks like itself: a new
// vault, or one from before markers, unless the vault knows files in it
// and its root holds nothing at all.
func Check(f Folder) (code, msg string) {
	dir, fsys := f.Dir(), f.FS()
	if o, ok := fsys.(*folder.OSFS); ok {
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
	id, err := folder.ReadMarker(fsys)
	switch {
	case err == nil && id == f.VaultID():
		return "", ""
	case err == nil:
		return api.CodeMarkerForeign, fmt.Sprintf("the folder %s belongs to another vault (its marker %s names vault %s); weft will not mix two vaults' files", dir, folder.MarkerPath, shortID(id))
	case errors.Is(err, folder.ErrBadMarker):
		return api.CodeMarkerForeign, fmt.Sprintf("the folder marker %s/%s is damaged (%v); see `weft folder reset`", dir, folder.MarkerPath, err)
	case !errors.Is(err, folder.ErrNoMarker):
		return api.CodeUnreadable, fmt.Sprintf("the folder %s cannot be read: %v", dir, err)
	}
	marked, err := f.Marked()
	if err != nil {
		return api.CodeUnreadable, fmt.Sprintf("reading the vault database: %v", err)
	}
	if marked {
		return api.CodeMarkerMissing, fmt.Sprintf("the folder marker %s is missing from %s: the folder looks replaced (an unmounted drive, an empty folder put in its place); put the real folder back, or see `weft folder reset`", folder.MarkerPath, dir)
	}
	if files := f.Holds(); files != 0 {
		empty, err := rootEmpty(fsys)
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
	if err := f.Mark(); err != nil {
		return api.CodeUnreadable, fmt.Sprintf("writing the folder marker in %s: %v", dir, err)
	}
	return "", ""
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
