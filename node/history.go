package node

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// File history: every version of a path that this device's vault knows,
// read from the signed logs (docs/history.md). History is per path: a
// rename is a deletion at the old path and a new version at the new one,
// with no link between them in the log, so each name has its own history.

// Errors of history and restore. The API maps them to status codes
// (restoreStatus).
var (
	// errNoHistory: the log holds no version of the path.
	errNoHistory = api.Classified(api.ErrNotFound, "no version of this path is known")
	// errNoSuchVersion: the version asked for is not a version of the path.
	errNoSuchVersion = api.Classified(api.ErrNotFound, "no such version of this path")
	// errNotSettled: the path has versions this device has not applied
	// yet (it is still syncing, or a conflict is being resolved).
	errNotSettled = api.Classified(api.ErrConflict, "this path is still syncing")
	// errChangedSinceScan: the file on disk changed since its last scan;
	// restoring would overwrite an edit no version records.
	errChangedSinceScan = api.Classified(api.ErrConflict, "changed on disk since its last scan")
	// errContentUnavailable: no reachable device holds the content of the
	// version to restore.
	errContentUnavailable = api.Classified(api.ErrUnavailable, "the content of this version is not available")
	// errBadRestore: the request itself is malformed.
	errBadRestore = api.Classified(api.ErrInvalid, "bad restore request")
)

// versionIDString formats a version ID as HistoryVersion.ID does.
func versionIDString(id entry.VersionID) string {
	return fmt.Sprintf("%s/%d/%d", id.Author.Short(), id.Seq, id.Index)
}

// matchVersionID reports whether s names id: "SHORT/SEQ/INDEX", where
// SHORT may also be the full device ID or its hex.
func matchVersionID(s string, id entry.VersionID) bool {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return false
	}
	seq, err1 := strconv.ParseUint(parts[1], 10, 64)
	idx, err2 := strconv.ParseUint(parts[2], 10, 32)
	if err1 != nil || err2 != nil || seq != id.Seq || uint32(idx) != id.Index {
		return false
	}
	a := parts[0]
	return a == id.Author.Short() || a == id.Author.String() || strings.EqualFold(a, hex.EncodeToString(id.Author[:]))
}

// pathVersion is one version of a path with what history needs of it.
type pathVersion struct {
	id   entry.VersionID
	ver  entry.Version
	core protocol.Version
	time int64 // entry time, unix ms (the author's claim)
}

// versionsOfLocked returns every known version of path, unsorted, without
// times. v.mu must be held. It walks every body the vault holds: its cost
// is the size of the vault's history, not of the path's.
func (v *vault) versionsOfLocked(path string) []pathVersion {
	var out []pathVersion
	for id, ver := range v.bodies {
		if ver.Path != path {
			continue
		}
		cv, ok := v.graph.Get(id)
		if !ok {
			continue
		}
		out = append(out, pathVersion{id: id, ver: ver, core: cv})
	}
	return out
}

// versionsByPathLocked groups every known version by path, keeping the
// paths for which keep returns true. v.mu must be held.
func (v *vault) versionsByPathLocked(keep func(string) bool) map[string][]pathVersion {
	out := map[string][]pathVersion{}
	for id, ver := range v.bodies {
		if !keep(ver.Path) {
			continue
		}
		cv, ok := v.graph.Get(id)
		if !ok {
			continue
		}
		out[ver.Path] = append(out[ver.Path], pathVersion{id: id, ver: ver, core: cv})
	}
	return out
}

// entryTimes fills in each version's entry time from the log. cache
// (author, seq) -> time may be shared between calls. Entries are read
// without v.mu; the database serialises itself.
func (v *vault) entryTimes(pvs []pathVersion, cache map[entryRef]int64) error {
	for i := range pvs {
		k := entryRef{pvs[i].id.Author, pvs[i].id.Seq}
		t, ok := cache[k]
		if !ok {
			e, err := v.db.Get(k.author, k.seq)
			if err != nil {
				return fmt.Errorf("reading entry %s/%d: %w", k.author.Short(), k.seq, err)
			}
			t = e.Time()
			cache[k] = t
		}
		pvs[i].time = t
	}
	return nil
}

// entryRef names one entry of one author's log.
type entryRef struct {
	author keys.DeviceID
	seq    uint64
}

// sortNewestFirst orders versions newest first: by Lamport clock (which
// the version graph respects: a version's clock is above that of every
// version it validly supersedes), then by entry time, then by ID.
func sortNewestFirst(pvs []pathVersion) {
	slices.SortFunc(pvs, func(a, b pathVersion) int {
		if c := cmp.Compare(b.core.Clock, a.core.Clock); c != 0 {
			return c
		}
		if c := cmp.Compare(b.time, a.time); c != 0 {
			return c
		}
		return b.id.Compare(a.id)
	})
}

// History lists every version of the path abs (absolute, on disk, inside a
// synced folder) that this device knows, newest first. It returns an
// error wrapping errNotInFolder or errNoHistory when there is nothing to
// list.
func (n *Node) History(abs string) (api.History, error) {
	v, rel, err := n.resolvePath(abs)
	if err != nil {
		return api.History{}, err
	}
	return v.history(rel)
}

// history lists the versions of path (relative to the folder).
func (v *vault) history(path string) (api.History, error) {
	self := v.n.id.ID()
	v.mu.Lock()
	pvs := v.versionsOfLocked(path)
	heads := map[entry.VersionID]bool{}
	for _, h := range v.graph.Heads(path) {
		heads[h.ID] = true
	}
	cur, had := v.index[path]
	v.mu.Unlock()
	if len(pvs) == 0 {
		return api.History{}, fmt.Errorf("%s: %w", path, errNoHistory)
	}
	if err := v.entryTimes(pvs, map[entryRef]int64{}); err != nil {
		return api.History{}, err
	}
	sortNewestFirst(pvs)
	h := api.History{Folder: v.cfg.Folder, Path: path, Versions: make([]api.HistoryVersion, 0, len(pvs))}
	var r reach
	for _, pv := range pvs {
		hv := api.HistoryVersion{
			ID: versionIDString(pv.id), Time: time.UnixMilli(pv.time).UTC(),
			Author: pv.id.Author.String(), AuthorShort: pv.id.Author.Short(), Self: pv.id.Author == self,
			Kind: pv.ver.Kind.String(), Size: pv.ver.Size, State: "superseded", Supersedes: []string{},
		}
		if pv.ver.Kind != entry.KindDeletion {
			mt := time.Unix(0, pv.ver.MTime).UTC()
			hv.MTime = &mt
		}
		switch {
		case heads[pv.id] && pv.ver.Kind == entry.KindDeletion:
			hv.State = "deleted"
		case heads[pv.id]:
			hv.State = "current"
		}
		if pv.ver.Kind == entry.KindDeletion {
			hv.OnDisk = heads[pv.id] && !had
		} else {
			hv.OnDisk = had && cur.Version == pv.id
		}
		for _, s := range pv.ver.Supersedes {
			hv.Supersedes = append(hv.Supersedes, versionIDString(s))
		}
		if pv.ver.Kind == entry.KindFile {
			hv.Hash = hex.EncodeToString(pv.ver.Hash[:])
			hv.Content = v.contentSource(pv.ver, &r)
		}
		h.Versions = append(h.Versions, hv)
	}
	return h, nil
}

// reach says which members of the vault this device is connected to; the
// zero value is not yet looked at.
type reach struct {
	known, devices, relays bool
}

// look fills r in, once.
func (r *reach) look(v *vault) {
	if r.known {
		return
	}
	r.known = true
	relays := map[keys.DeviceID]bool{}
	for _, rr := range v.relays() {
		relays[rr.dev] = true
	}
	for _, c := range v.n.connectedMembers(v) {
		if relays[c.dev] {
			r.relays = true
		} else {
			r.devices = true
		}
	}
}

// contentSource says where a file version's content can come from
// (HistoryVersion.Content). r caches who is connected across calls.
func (v *vault) contentSource(ver entry.Version, r *reach) string {
	if len(ver.Chunks) == 0 {
		return "inline"
	}
	inFolder := true
	v.mu.Lock()
	here := make([]bool, len(ver.Chunks))
	for i, c := range ver.Chunks {
		here[i] = len(v.chunkLoc[c.CID]) > 0
	}
	v.mu.Unlock()
	for i, c := range ver.Chunks {
		if here[i] {
			continue
		}
		inFolder = false
		if v.keep.has(c.CID) {
			continue
		}
		if r == nil {
			r = &reach{}
		}
		r.look(v)
		switch {
		case r.devices:
			return "peers"
		case r.relays:
			return "relay"
		}
		return "none"
	}
	if inFolder {
		return "local"
	}
	return "versions"
}

// versionAt returns the version of a path that was current at t (unix
// ms), from the path's versions pvs (with times), or ok == false when the
// path did not exist then (no version yet, or a deletion was current).
//
// Times are the authors' claims and may be wrong, so they only pick a cut
// of the version graph; the order comes from the graph. The cut is every
// version whose entry time is at or before t, together with everything it
// supersedes (a version cannot have been written before what it
// replaced). The cut's heads are what was current; when there are
// several (concurrent edits not yet resolved at t) the one that keeps the
// name under the sync core's rules (protocol.Resolve's winner) is taken.
func versionAt(pvs []pathVersion, t int64) (pathVersion, bool) {
	byID := make(map[protocol.VersionID]int, len(pvs))
	for i, pv := range pvs {
		byID[pv.core.ID] = i
	}
	in := make([]bool, len(pvs))
	var stack []int
	for i, pv := range pvs {
		if pv.time <= t && !in[i] {
			in[i] = true
			stack = append(stack, i)
		}
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, s := range pvs[i].core.Supersedes {
			if j, ok := byID[s]; ok && !in[j] {
				in[j] = true
				stack = append(stack, j)
			}
		}
	}
	g := protocol.NewGraph()
	var path string
	for i, pv := range pvs {
		if in[i] {
			_ = g.Add(pv.core) // versions came from a graph: already valid
			path = pv.core.Path
		}
	}
	if path == "" {
		return pathVersion{}, false
	}
	dec, err := g.Resolve(path, nil)
	if err != nil {
		return pathVersion{}, false
	}
	pv := pvs[byID[dec.Winner.ID]]
	if pv.ver.Kind == entry.KindDeletion {
		return pathVersion{}, false
	}
	return pv, true
}
