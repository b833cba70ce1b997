package relay

import (
	"iter"

	"github.com/ipfs/go-cid"
)

// wantSet is the chunks and pieces a replica wants, kept in the order they
// were first wanted: the order the stored versions list them, which is a
// file's order. A fetch round takes the oldest first, so a device sends a
// file's chunks in order and the store keeps them side by side, in a pack
// or an object, where a download later reads them together (an object
// store reads them a window at a time, store/s3store/window.go). A map
// gave them in random order, and a download read every object at once.
type wantSet struct {
	m     map[cid.Cid]uint64 // wanted CID -> the seq of its entry in order
	order []wantEntry        // oldest first; entries whose seq m no longer names are stale
	seq   uint64
}

type wantEntry struct {
	c   cid.Cid
	seq uint64
}

func newWantSet() wantSet { return wantSet{m: map[cid.Cid]uint64{}} }

func (w *wantSet) has(c cid.Cid) bool { _, ok := w.m[c]; return ok }

func (w *wantSet) len() int { return len(w.m) }

// add wants c, after every chunk wanted before it.
func (w *wantSet) add(c cid.Cid) {
	if _, ok := w.m[c]; ok {
		return
	}
	w.seq++
	w.m[c] = w.seq
	w.order = append(w.order, wantEntry{c, w.seq})
}

// del no longer wants c.
func (w *wantSet) del(c cid.Cid) {
	delete(w.m, c)
	if len(w.m) == 0 {
		w.order = w.order[:0]
	}
}

func (w *wantSet) live(e wantEntry) bool { s, ok := w.m[e.c]; return ok && s == e.seq }

// all yields every wanted CID (in no order); del may be called meanwhile.
func (w *wantSet) all() iter.Seq[cid.Cid] {
	return func(yield func(cid.Cid) bool) {
		for c := range w.m {
			if !yield(c) {
				return
			}
		}
	}
}

// oldest returns up to n wanted CIDs, oldest first, that skip does not
// refuse. It drops stale entries from the part of the order it scans, and
// compacts the whole order when most of it is stale.
func (w *wantSet) oldest(n int, skip func(cid.Cid) bool) []cid.Cid {
	out := make([]cid.Cid, 0, min(n, len(w.m)))
	keep := w.order[:0]
	i := 0
	for ; i < len(w.order) && len(out) < n; i++ {
		e := w.order[i]
		if !w.live(e) {
			continue
		}
		keep = append(keep, e)
		if !skip(e.c) {
			out = append(out, e.c)
		}
	}
	w.order = append(keep, w.order[i:]...)
	if len(w.order) > 2*len(w.m)+1024 { // a GC unwanted most of it
		fresh := make([]wantEntry, 0, len(w.m))
		for _, e := range w.order {
			if w.live(e) {
				fresh = append(fresh, e)
			}
		}
		w.order = fresh
	}
	return out
}
