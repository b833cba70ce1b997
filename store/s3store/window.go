package s3store

import (
	"sync"
)

// Reads of one object that come together. A device downloading a large
// file asks the relay for its chunks a few at a time (netsync.ChunkServer
// reads four at once), and the chunks of a file sit in a handful of
// objects, though not in file order (they were fetched and stored
// concurrently). One ranged GET per chunk would be 16,000 requests per GiB
// of 64 KiB chunks, and a round trip each; so once an object has been read
// recently, the store reads it a window at a time (aligned, windowSize
// bytes) and serves the chunks in a window from memory, concurrent readers
// of one window sharing its GET. The first read of an object (a single
// note) is one GET of just its record: a window would cost egress for
// bytes nobody asked for.
const (
	windowSize    = 1 << 20
	windowsCached = 8 // 8 MiB at most
	lastReadsKept = 256
)

type windowKey struct {
	seq uint64
	k   int64 // offset / windowSize
}

// window is one aligned span of an object, read once (ready closes).
type window struct {
	ready chan struct{}
	data  []byte
	err   error
}

// windows caches the last windows read and remembers which objects were
// read recently.
type windows struct {
	mu    sync.Mutex
	m     map[windowKey]*window
	order []windowKey         // oldest first
	last  map[uint64]struct{} // objects read recently
}

func newWindows() *windows {
	return &windows{m: map[windowKey]*window{}, last: map[uint64]struct{}{}}
}

// follows records a read of object seq and reports whether the object
// was read recently (one of the last lastReadsKept objects read).
func (w *windows) follows(seq uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.last[seq]; ok {
		return true
	}
	if len(w.last) >= lastReadsKept {
		clear(w.last)
	}
	w.last[seq] = struct{}{}
	return false
}

// get returns window key, reading it with read unless it is cached or
// being read.
func (w *windows) get(key windowKey, read func() ([]byte, error)) ([]byte, error) {
	w.mu.Lock()
	win, ok := w.m[key]
	if !ok {
		win = &window{ready: make(chan struct{})}
		w.m[key] = win
		w.order = append(w.order, key)
		for len(w.order) > windowsCached {
			delete(w.m, w.order[0])
			w.order = w.order[1:]
		}
	}
	w.mu.Unlock()
	if ok {
		<-win.ready
		return win.data, win.err
	}
	win.data, win.err = read()
	close(win.ready)
	if win.err != nil {
		w.mu.Lock()
		if w.m[key] == win {
			delete(w.m, key) // not cached: the next reader tries again
		}
		w.mu.Unlock()
	}
	return win.data, win.err
}

// readRecord reads length bytes of object o from off: through windows
// when the object was read recently, else alone.
func (s *Store) readRecord(o object, off, length int64) ([]byte, error) {
	if length > windowSize || !s.win.follows(o.seq) {
		return s.readRange(o.name, off, length)
	}
	out := make([]byte, 0, length)
	for k := off / windowSize; k <= (off+length-1)/windowSize; k++ {
		start := k * windowSize
		if start >= o.size {
			break // past the object's end: the record check fails
		}
		data, err := s.win.get(windowKey{o.seq, k}, func() ([]byte, error) {
			return s.readRange(o.name, start, min(windowSize, o.size-start))
		})
		if err != nil {
			return nil, err
		}
		lo, hi := max(off-start, 0), min(off+length-start, int64(len(data)))
		if lo >= hi {
			break // past the object's end: the record check fails
		}
		out = append(out, data[lo:hi]...)
		if hi < min(off+length-start, windowSize) {
			break // a short object
		}
	}
	return out, nil
}
