package history

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
)

// CheckRequest refuses a restore request that does not say what to
// restore, or says it twice. Errors wrap ErrBadRestore.
func CheckRequest(req api.RestoreRequest) error {
	switch {
	case req.Version != "" && (req.At != "" || req.All):
		return fmt.Errorf("%w: a version names one path's version; it goes without --at and --all", ErrBadRestore)
	case req.All && req.At == "":
		return fmt.Errorf("%w: --all needs --at", ErrBadRestore)
	case !req.All && req.Path == "":
		return fmt.Errorf("%w: a path is needed (or --all)", ErrBadRestore)
	case !req.All && req.Version == "" && req.At == "":
		return fmt.Errorf("%w: say which version: --version ID or --at TIME", ErrBadRestore)
	}
	return nil
}

// Item is one path to restore: to From's content, or deleted when From
// is nil.
type Item struct {
	Path    string
	From    *Version
	Content string // where From's content comes from (ContentSource), once checked
}

// Change describes the item for an api.RestoreResult.
func (it Item) Change(folderPath string) api.RestoreChange {
	c := api.RestoreChange{Folder: folderPath, Path: it.Path, Action: "delete"}
	if it.From != nil {
		c.Action, c.From, c.Kind, c.Size = "restore", IDString(it.From.ID), it.From.Ver.Kind.String(), it.From.Ver.Size
		c.Content = it.Content
	}
	return c
}

// Why a checked item cannot be restored (api.RestoreFailure.Code), each
// with the error class FailedErr wraps for it.
const (
	// FailSyncing: the path has heads this device has not applied.
	FailSyncing = "syncing"
	// FailChanged: the file changed on disk since its last scan.
	FailChanged = "changed"
	// FailUnavailable: some of the content is nowhere to be had.
	FailUnavailable = "unavailable"
)

// Failure describes the item as a path that cannot be restored, for the
// reason code (FailSyncing, FailChanged, FailUnavailable) with detail.
func (it Item) Failure(folderPath, code, reason string) api.RestoreFailure {
	f := api.RestoreFailure{Folder: folderPath, Path: it.Path, Code: code, Reason: reason}
	if it.From != nil {
		f.From = IDString(it.From.ID)
	}
	return f
}

// FailedErr names every path that cannot be restored, wrapping the error
// class of the first (for the API's status code).
func FailedErr(fs []api.RestoreFailure) error {
	class := map[string]error{FailUnavailable: ErrContentUnavailable, FailSyncing: ErrNotSettled, FailChanged: ErrChangedSinceScan}
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "\n  %s: %s", f.Path, f.Reason)
	}
	n := "1 path"
	if len(fs) > 1 {
		n = fmt.Sprintf("%d paths", len(fs))
	}
	return fmt.Errorf("%w: %s cannot be restored; nothing was restored (--partial restores the rest):%s", class[fs[0].Code], n, b.String())
}

// PlanOne plans restoring p.Path to the version named by id, or else (id
// empty) to the one current at t (unix ms), reading entry times through
// times only then. The plan is empty when the disk already holds that
// content.
func PlanOne(p Path, id string, t int64, times *Times) ([]Item, error) {
	vs := p.Versions
	if len(vs) == 0 {
		return nil, fmt.Errorf("%s: %w", p.Path, ErrNoHistory)
	}
	var target *Version
	if id != "" {
		for i := range vs {
			if MatchID(id, vs[i].ID) {
				if target != nil {
					return nil, fmt.Errorf("%w: %q names several versions of %s; use the author's full device ID", ErrBadRestore, id, p.Path)
				}
				target = &vs[i]
			}
		}
		if target == nil {
			return nil, fmt.Errorf("%s: version %q: %w (see `weft history`)", p.Path, id, ErrNoSuchVersion)
		}
		if target.Ver.Kind == entry.KindDeletion {
			target = nil
		}
	} else {
		if err := times.Fill(vs); err != nil {
			return nil, err
		}
		if pv, ok := At(vs, t); ok {
			target = &pv
		}
	}
	if Holds(target, p.Disk, p.Indexed) {
		return nil, nil
	}
	return []Item{{Path: p.Path, From: target}}, nil
}

// PlanAll plans restoring every path of byPath (its versions) to what was
// current at t (unix ms): paths whose current content (index) differs get
// that version back, paths that did not exist then are deleted. Non-
// deletions come first, parents before children, then deletions, children
// first, then kind changes of directories (which wait for the directory
// to be emptied).
func PlanAll(byPath map[string][]Version, index map[string]engine.Disk, t int64, times *Times) ([]Item, error) {
	var adds, dels, after []Item
	for p, vs := range byPath {
		if err := times.Fill(vs); err != nil {
			return nil, err
		}
		cur, had := index[p]
		var target *Version
		if pv, ok := At(vs, t); ok {
			target = &pv
		}
		if Holds(target, cur, had) {
			continue
		}
		it := Item{Path: p, From: target}
		switch {
		case target == nil:
			dels = append(dels, it)
		case had && cur.Kind == entry.KindDir:
			after = append(after, it)
		default:
			adds = append(adds, it)
		}
	}
	byName := func(a, b Item) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(adds, byName)
	slices.SortFunc(dels, func(a, b Item) int { return -byName(a, b) })
	slices.SortFunc(after, byName)
	return slices.Concat(adds, dels, after), nil
}

// Holds reports whether the disk (as the index records it: cur, when had)
// already holds target's content (nil: nothing at the path).
func Holds(target *Version, cur engine.Disk, had bool) bool {
	if target == nil {
		return !had
	}
	if !had || cur.Kind != target.Ver.Kind {
		return false
	}
	switch cur.Kind {
	case entry.KindFile:
		return cur.ContentHash == target.Ver.Hash && cur.Mode&0o111 == target.Ver.Mode&0o111
	case entry.KindSymlink:
		return cur.ContentHash == engine.SymlinkHash(target.Ver.Target)
	}
	return true
}
