package node

import (
	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/history"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// File history and restore (docs/history.md): the rules are
// node/history's, pure over what this file gathers under v.mu.

// versionsOfLocked returns every known version of path, unsorted, without
// times. v.mu must be held. Its cost is the path's history.
func (v *vault) versionsOfLocked(path string) []history.Version {
	var out []history.Version
	for cv, ver := range v.view.BodiesAt(path) {
		out = append(out, history.Version{ID: cv.ID, Ver: ver, Core: cv})
	}
	return out
}

// versionsByPathLocked groups every known version by path, keeping the
// paths for which keep returns true. v.mu must be held.
func (v *vault) versionsByPathLocked(keep func(string) bool) map[string][]history.Version {
	out := map[string][]history.Version{}
	for cv, ver := range v.view.Bodies() {
		if keep(cv.Path) {
			out[cv.Path] = append(out[cv.Path], history.Version{ID: cv.ID, Ver: ver, Core: cv})
		}
	}
	return out
}

// historyPath gathers what history knows of path, with entry times.
func (v *vault) historyPath(path string) history.Path {
	p := history.Path{Folder: v.cfg.Folder, Path: path, Heads: map[entry.VersionID]bool{}}
	v.mu.Lock()
	p.Versions = v.versionsOfLocked(path)
	for _, h := range v.view.Graph.Heads(path) {
		p.Heads[h.ID] = true
	}
	cur, had := v.index.Get(path)
	v.mu.Unlock()
	p.Disk, p.Indexed = diskOf(cur), had
	return p
}

// entryTimes reads entry times from the vault's log. The database
// serialises itself: no v.mu.
func (v *vault) entryTimes() *history.Times {
	return history.NewTimes(func(author keys.DeviceID, seq uint64) (int64, error) {
		e, err := v.db.Get(author, seq)
		if err != nil {
			return 0, err
		}
		return e.Time(), nil
	})
}

// History lists every version of the path abs (absolute, on disk, inside a
// synced folder) that this device knows, newest first. It returns an
// error wrapping errNotInFolder or history.ErrNoHistory when there is
// nothing to list.
func (b apiBackend) History(abs string) (api.History, error) {
	v, rel, err := b.resolvePath(abs)
	if err != nil {
		return api.History{}, err
	}
	return v.history(rel)
}

// history lists the versions of path (relative to the folder).
func (v *vault) history(path string) (api.History, error) {
	p := v.historyPath(path)
	if err := v.entryTimes().Fill(p.Versions); err != nil {
		return api.History{}, err
	}
	h, err := history.List(p, v.device.ID(), &contentWhere{v: v})
	if err != nil {
		return h, err
	}
	for i := range h.Versions {
		if d, err := keys.ParseDeviceID(h.Versions[i].Author); err == nil {
			h.Versions[i].AuthorName = v.roster.Name(d)
		}
	}
	return h, nil
}

// contentWhere is history.Where for one vault: the folder index's chunk
// locations, the local version store, and the connections (looked up
// once, on the first question about them).
type contentWhere struct {
	v                      *vault
	known, devices, relays bool
}

func (w *contentWhere) InFolder(c cid.Cid) bool {
	return w.v.chunks.Has(c)
}

func (w *contentWhere) Kept(c cid.Cid) bool { return w.v.keep.Has(c) }

func (w *contentWhere) Reach() (devices, relays bool) {
	if !w.known {
		w.known = true
		rs := map[keys.DeviceID]bool{}
		for _, rr := range w.v.relays() {
			rs[rr.dev] = true
		}
		for _, c := range w.v.agent.connectedMembers(w.v) {
			if rs[c.dev] {
				w.relays = true
			} else {
				w.devices = true
			}
		}
	}
	return w.devices, w.relays
}
