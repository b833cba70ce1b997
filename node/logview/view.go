package logview

import (
	"iter"
	"log/slog"
	"maps"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// EntryRef names one entry of one author's log.
type EntryRef struct {
	Author keys.DeviceID
	Seq    uint64
}

// View is what a vault derived from its log. The zero value is not
// usable; New makes one.
type View struct {
	// Graph is the version graph. A folded version's body, without its
	// inline bytes (Inline keeps the recent ones), is its graph version
	// and rest (Body).
	Graph  *protocol.Graph
	Inline InlineCache
	// rest is what a body says beyond its graph version: a file's chunk
	// list, a symlink's target. Only versions with either have one, so a
	// vault of small files keeps each version once (100,000 notes kept a
	// second copy of 24 MB, docs/benchmarks.md).
	rest map[protocol.VersionID]bodyRest
	// Replaying is set while the stored log is folded in at open, and
	// while this device folds in what it has just authored: what the log
	// replays was applied, and what the device wrote is on its disk, or
	// either is read back when needed, so its inline bytes are not
	// cached.
	Replaying bool
	// Clock is the highest Lamport clock seen; HLC the latest entry time
	// seen or written (unix ms, node/clock).
	Clock uint64
	HLC   int64
	// Folded is, per author, the highest sequence whose body is in the
	// graph.
	Folded map[keys.DeviceID]uint64
	// SnapReach is Folded when the graph snapshot was loaded or last
	// written; Pieced the entries folded in that list pieces (both for
	// node's graphsnap.go).
	SnapReach map[keys.DeviceID]uint64
	Pieced    map[EntryRef]struct{}

	held       map[keys.DeviceID]uint64 // see HeldVector
	fromAuthor map[keys.DeviceID]uint64 // see NoteFromAuthor
	ahead      map[EntryRef][]byte      // see HoldBack
	aheadBytes int
	log        *slog.Logger
}

// New returns an empty view; log is where versions the graph refuses are
// told.
func New(log *slog.Logger) *View {
	if log == nil {
		log = slog.Default()
	}
	return &View{
		Graph:  protocol.NewGraph(),
		rest:   map[protocol.VersionID]bodyRest{},
		Folded: map[keys.DeviceID]uint64{},
		Pieced: map[EntryRef]struct{}{},
		held:   map[keys.DeviceID]uint64{},
		log:    log,
	}
}

// Fold folds an entry's versions into the graph, calling touch with each
// version's path (the paths that now need a decision). A version the
// graph refuses is logged and left out. Inline bytes go to the cache,
// not the bodies, unless the view is replaying.
func (w *View) Fold(e *entry.Entry, body *entry.Body, touch func(path string)) {
	w.Clock = max(w.Clock, e.Clock())
	w.HLC = max(w.HLC, e.Time())
	w.Folded[e.Author()] = max(w.Folded[e.Author()], e.Seq())
	if e.Pieced() {
		w.Pieced[EntryRef{e.Author(), e.Seq()}] = struct{}{}
	}
	for i, ver := range body.Versions {
		id := e.VersionID(i)
		cv := engine.CoreVersion(id, e.Clock(), e.Time(), ver)
		cv.AuthorName = body.Author
		if err := w.Graph.Add(cv); err != nil {
			w.log.Warn("version not added to graph", "version", id, "err", err)
			continue
		}
		if IsInline(ver) {
			if !w.Replaying {
				w.Inline.Put(id, ver.Inline)
			}
			ver.Inline = nil
		}
		w.SetBody(id, ver)
		touch(ver.Path)
	}
}

// bodyRest is what a folded version's body holds that its graph version
// does not.
type bodyRest struct {
	Chunks []entry.ChunkRef
	Target string
}

// Body returns the body of the folded version id, without inline bytes:
// its graph version's fields, and its chunk list or target.
func (w *View) Body(id protocol.VersionID) (entry.Version, bool) {
	cv, ok := w.Graph.Get(id)
	if !ok {
		return entry.Version{}, false
	}
	return w.bodyOf(cv), true
}

// bodyOf is the body of the graph's version cv: the inverse of
// engine.CoreVersion for the fields a valid body can hold (entry
// validation keeps a hash on files alone).
func (w *View) bodyOf(cv protocol.Version) entry.Version {
	ver := entry.Version{Path: cv.Path, Kind: cv.Kind, Mode: cv.Mode, MTime: cv.MTime, Size: cv.Size, Supersedes: cv.Supersedes}
	if cv.Kind == entry.KindFile {
		ver.Hash = cv.ContentHash
	}
	if r, ok := w.rest[cv.ID]; ok {
		ver.Chunks, ver.Target = r.Chunks, r.Target
	}
	return ver
}

// SetBody records ver as the body of id, which the graph must hold: Fold
// does, and the graph snapshot's loader and the piece repair (which
// replaces a chunk list of pieces with the chunks they list) after it.
// Inline bytes are not kept.
func (w *View) SetBody(id protocol.VersionID, ver entry.Version) {
	if len(ver.Chunks) == 0 && ver.Target == "" {
		delete(w.rest, id)
		return
	}
	w.rest[id] = bodyRest{Chunks: ver.Chunks, Target: ver.Target}
}

// Bodies iterates over every folded version and its body, in no
// particular order. The view must not change during the iteration.
func (w *View) Bodies() iter.Seq2[protocol.Version, entry.Version] {
	return func(yield func(protocol.Version, entry.Version) bool) {
		for cv := range w.Graph.All() {
			if !yield(cv, w.bodyOf(cv)) {
				return
			}
		}
	}
}

// BodiesAt iterates over the bodies of every folded version at path: its
// cost is the path's history.
func (w *View) BodiesAt(path string) iter.Seq2[protocol.Version, entry.Version] {
	return func(yield func(protocol.Version, entry.Version) bool) {
		for cv := range w.Graph.At(path) {
			if !yield(cv, w.bodyOf(cv)) {
				return
			}
		}
	}
}

// HeadIDs is engine.HeadIDs over the graph: the IDs of path's heads.
func (w *View) HeadIDs(path string) []entry.VersionID { return engine.HeadIDs(w.Graph, path) }

// Unsaved reports whether anything was folded in since the snapshot was
// loaded or last written (SnapReach).
func (w *View) Unsaved() bool { return !maps.Equal(w.SnapReach, w.Folded) }

// HeldVector is, per author, the highest sequence up to which every entry
// is held in full: the entry, and the content of each of its versions as
// held says (the node's held rule, engine.Policy.Held, asked of one
// folded version). heads are the log's heads; an entry stored but not yet
// folded in is not held (its versions are unknown here). The prefix
// advances from the last answer, so each entry is asked about until it
// is held, and never again.
func (w *View) HeldVector(heads map[keys.DeviceID]uint64, held func(id protocol.VersionID, ver entry.Version) bool) protocol.Vector {
	out := protocol.Vector{}
	for author, head := range heads {
		limit := min(head, w.Folded[author])
		s := w.held[author]
		for s < limit && w.entryHeld(author, s+1, held) {
			s++
		}
		w.held[author] = s
		if s > 0 {
			out[author] = s
		}
	}
	return out
}

// entryHeld reports whether every folded version of entry (author, seq)
// is held.
func (w *View) entryHeld(author keys.DeviceID, seq uint64, held func(protocol.VersionID, entry.Version) bool) bool {
	for i := uint32(0); ; i++ {
		id := protocol.VersionID{Author: author, Seq: seq, Index: i}
		ver, ok := w.Body(id)
		if !ok {
			return true
		}
		if !held(id, ver) {
			return false
		}
	}
}

// NoteFromAuthor records that author sent its entry seq itself: the
// author holds its log up to there, so the log session need not send it
// back. (A device that loses its log tail restarts, and its new
// LogRequest says what it holds: the session counts only what came after
// the request.) Before this, every entry came straight back to its author
// over the author's own log stream: for a version of a large file that
// was the whole chunk list, 1.29 MiB per edit of a 1 GiB file (B6).
func (w *View) NoteFromAuthor(author keys.DeviceID, seq uint64) {
	if w.fromAuthor == nil {
		w.fromAuthor = map[keys.DeviceID]uint64{}
	}
	w.fromAuthor[author] = max(w.fromAuthor[author], seq)
}

// FromAuthor is the highest entry author sent itself (NoteFromAuthor).
func (w *View) FromAuthor(author keys.DeviceID) uint64 { return w.fromAuthor[author] }
