package history

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// Errors of history and restore. Each carries its api error class, which
// the local API maps to an HTTP status.
var (
	// ErrNoHistory: the log holds no version of the path.
	ErrNoHistory = api.Classified(api.ErrNotFound, "no version of this path is known")
	// ErrNoSuchVersion: the version asked for is not a version of the path.
	ErrNoSuchVersion = api.Classified(api.ErrNotFound, "no such version of this path")
	// ErrNotSettled: the path has versions this device has not applied
	// yet (it is still syncing, or a conflict is being resolved).
	ErrNotSettled = api.Classified(api.ErrConflict, "this path is still syncing")
	// ErrChangedSinceScan: the file on disk changed since its last scan;
	// restoring would overwrite an edit no version records.
	ErrChangedSinceScan = api.Classified(api.ErrConflict, "changed on disk since its last scan")
	// ErrContentUnavailable: no reachable device holds the content of the
	// version to restore.
	ErrContentUnavailable = api.Classified(api.ErrUnavailable, "the content of this version is not available")
	// ErrBadRestore: the request itself is malformed.
	ErrBadRestore = api.Classified(api.ErrInvalid, "bad restore request")
)

// IDString formats a version ID as api.HistoryVersion.ID shows it:
// "SHORT/SEQ/INDEX".
func IDString(id entry.VersionID) string {
	return fmt.Sprintf("%s/%d/%d", id.Author.Short(), id.Seq, id.Index)
}

// MatchID reports whether s names id: "SHORT/SEQ/INDEX", where SHORT may
// also be the full device ID or its hex.
func MatchID(s string, id entry.VersionID) bool {
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

// Version is one version of a path with what history needs of it.
type Version struct {
	ID   entry.VersionID
	Ver  entry.Version    // as its entry's body carries it
	Core protocol.Version // the sync core's view (the graph's)
	Time int64            // entry time, unix ms (the author's claim); see Times
}

// TimeOf reads the time of one entry (author, seq) from the log: unix ms.
type TimeOf func(author keys.DeviceID, seq uint64) (int64, error)

// Times fills in versions' entry times, reading each entry once however
// many versions it carries.
type Times struct {
	of    TimeOf
	cache map[entryRef]int64
}

// entryRef names one entry of one author's log.
type entryRef struct {
	author keys.DeviceID
	seq    uint64
}

// NewTimes returns a Times reading from of.
func NewTimes(of TimeOf) *Times {
	return &Times{of: of, cache: map[entryRef]int64{}}
}

// Fill sets each version's Time.
func (t *Times) Fill(vs []Version) error {
	for i := range vs {
		k := entryRef{vs[i].ID.Author, vs[i].ID.Seq}
		ms, ok := t.cache[k]
		if !ok {
			var err error
			if ms, err = t.of(k.author, k.seq); err != nil {
				return fmt.Errorf("reading entry %s/%d: %w", k.author.Short(), k.seq, err)
			}
			t.cache[k] = ms
		}
		vs[i].Time = ms
	}
	return nil
}

// SortNewestFirst orders versions newest first: by Lamport clock (which
// the version graph respects: a version's clock is above that of every
// version it validly supersedes), then by entry time, then by ID.
func SortNewestFirst(vs []Version) {
	slices.SortFunc(vs, func(a, b Version) int {
		if c := cmp.Compare(b.Core.Clock, a.Core.Clock); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Time, a.Time); c != 0 {
			return c
		}
		return b.ID.Compare(a.ID)
	})
}

// Path is what the vault knows of one path, gathered under its lock.
type Path struct {
	Folder string // the folder's path on disk, for the answer
	Path   string // relative to the folder
	// Versions are every known version of the path, with times (Fill).
	Versions []Version
	// Heads are the path's current versions in the graph.
	Heads map[entry.VersionID]bool
	// Disk is what the folder index records at the path, when Indexed.
	Disk    engine.Disk
	Indexed bool
}

// List is `weft history`: every version of p, newest first, each with its
// state (current, deleted or superseded), whether the disk holds it, and
// (for files) where its content can come from. self is this device. It
// sorts p.Versions in place.
func List(p Path, self keys.DeviceID, where Where) (api.History, error) {
	if len(p.Versions) == 0 {
		return api.History{}, fmt.Errorf("%s: %w", p.Path, ErrNoHistory)
	}
	SortNewestFirst(p.Versions)
	h := api.History{Folder: p.Folder, Path: p.Path, Versions: make([]api.HistoryVersion, 0, len(p.Versions))}
	for _, pv := range p.Versions {
		hv := api.HistoryVersion{
			ID: IDString(pv.ID), Time: time.UnixMilli(pv.Time).UTC(),
			Author: pv.ID.Author.String(), AuthorShort: pv.ID.Author.Short(), Self: pv.ID.Author == self,
			Kind: pv.Ver.Kind.String(), Size: pv.Ver.Size, State: "superseded", Supersedes: []string{},
		}
		if pv.Ver.Kind != entry.KindDeletion {
			mt := time.Unix(0, pv.Ver.MTime).UTC()
			hv.MTime = &mt
		}
		head := p.Heads[pv.ID]
		switch {
		case head && pv.Ver.Kind == entry.KindDeletion:
			hv.State = "deleted"
		case head:
			hv.State = "current"
		}
		if pv.Ver.Kind == entry.KindDeletion {
			hv.OnDisk = head && !p.Indexed
		} else {
			hv.OnDisk = p.Indexed && p.Disk.Version == pv.ID
		}
		for _, s := range pv.Ver.Supersedes {
			hv.Supersedes = append(hv.Supersedes, IDString(s))
		}
		if pv.Ver.Kind == entry.KindFile {
			hv.Hash = hex.EncodeToString(pv.Ver.Hash[:])
			hv.Content = ContentSource(pv.Ver, where)
		}
		h.Versions = append(h.Versions, hv)
	}
	return h, nil
}

// Where answers where a chunk of a version can be had; node answers from
// its folder index, its local version store and its connections.
type Where interface {
	// InFolder: a file in the folder holds the chunk.
	InFolder(c cid.Cid) bool
	// Kept: the local version store holds it.
	Kept(c cid.Cid) bool
	// Reach says whether a member device, and a relay, are connected.
	Reach() (devices, relays bool)
}

// ContentSource says where a file version's content can come from
// (api.HistoryVersion.Content): "inline" (in the log itself), "local"
// (every chunk in the folder), "versions" (every chunk here, some only in
// the version store), else "peers", "relay" or "none" by what is
// connected.
func ContentSource(ver entry.Version, w Where) string {
	if len(ver.Chunks) == 0 {
		return "inline"
	}
	inFolder := true
	for _, c := range ver.Chunks {
		if w.InFolder(c.CID) {
			continue
		}
		inFolder = false
		if w.Kept(c.CID) {
			continue
		}
		devices, relays := w.Reach()
		switch {
		case devices:
			return "peers"
		case relays:
			return "relay"
		}
		return "none"
	}
	if inFolder {
		return "local"
	}
	return "versions"
}

// At returns the version of a path that was current at t (unix ms), from
// the path's versions vs (with times), or ok == false when the path did
// not exist then (no version yet, or a deletion was current).
//
// Times are the authors' claims and may be wrong, so they only pick a cut
// of the version graph; the order comes from the graph. The cut is every
// version whose entry time is at or before t, together with everything it
// supersedes (a version cannot have been written before what it
// replaced). The cut's heads are what was current; when there are several
// (concurrent edits not yet resolved at t) the one that keeps the name
// under the sync core's rules (protocol.Resolve's winner) is taken.
func At(vs []Version, t int64) (Version, bool) {
	byID := make(map[protocol.VersionID]int, len(vs))
	for i, pv := range vs {
		byID[pv.Core.ID] = i
	}
	in := make([]bool, len(vs))
	var stack []int
	for i, pv := range vs {
		if pv.Time <= t && !in[i] {
			in[i] = true
			stack = append(stack, i)
		}
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, s := range vs[i].Core.Supersedes {
			if j, ok := byID[s]; ok && !in[j] {
				in[j] = true
				stack = append(stack, j)
			}
		}
	}
	g := protocol.NewGraph()
	var path string
	for i, pv := range vs {
		if in[i] {
			_ = g.Add(pv.Core) // versions came from a graph: already valid
			path = pv.Core.Path
		}
	}
	if path == "" {
		return Version{}, false
	}
	dec, err := g.Resolve(path, nil)
	if err != nil {
		return Version{}, false
	}
	pv := vs[byID[dec.Winner.ID]]
	if pv.Ver.Kind == entry.KindDeletion {
		return Version{}, false
	}
	return pv, true
}

// ParseAt parses a --at value: RFC 3339 ("2026-11-30T06:00:00Z"), or a
// time before now: "-" followed by a Go duration ("-2h", "-1h30m") or a
// number of days ("-3d"). Errors wrap ErrBadRestore.
func ParseAt(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		if days, ok := strings.CutSuffix(rest, "d"); ok {
			n, err := strconv.ParseFloat(days, 64)
			if err != nil || n < 0 || n > 100_000 { // beyond ~270 years a Duration overflows
				return time.Time{}, fmt.Errorf("%w: time %q: want -Nd, -DURATION or RFC 3339", ErrBadRestore, s)
			}
			return now.Add(-time.Duration(n * float64(24*time.Hour))), nil
		}
		d, err := time.ParseDuration(rest)
		if err != nil || d < 0 {
			return time.Time{}, fmt.Errorf("%w: time %q: want -Nd, -DURATION or RFC 3339", ErrBadRestore, s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: time %q: want -Nd, -DURATION or RFC 3339", ErrBadRestore, s)
	}
	return t, nil
}
