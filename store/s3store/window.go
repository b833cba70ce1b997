package s3store

import (
	"sync"
)

// Reads in order. A device downloading a large file asks the relay for its
// chunks in order, a few at once (netsync.ChunkServer), and a file's
// chunks sit side by side in the objects they were uploaded in. One ranged
// GET per chunk would be 16,000 requests per GiB of 64 KiB chunks (and a
// round trip each); so once reads of an object come in order, the store
// reads it a window at a time (aligned, windowSize bytes) and serves the
// chunks in a window from memory, with concurrent readers of one window
// sharing its GET. A read that does not follow another in its object (a
// single note) is still one GET of just its record: a window would cost
// egress for bytes nobody asked for.
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

// windows caches the last windows read and remembers where the last read
// of each recently read object started.
type windows struct {
	mu    sync.Mutex
	m     map[windowKey]*window
	order []windowKey      // oldest first
	last  map[uint64]int64 // object -> offset of its last read
}

func newWindows() *windows {
	return &windows{m: map[windowKey]*window{}, last: map[uint64]int64{}}
}

// follows records a read of object seq at off and reports whether it
// follows a read of the same object within a window's distance.
func (w *windows) follows(seq uint64, off int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev, ok := w.last[seq]
	if len(w.last) >= lastReadsKept && !ok {
		clear(w.last)
	}
	w.last[seq] = off
	return ok && off-prev <= windowSize && prev-off <= windowSize
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
// when the read follows another of the same object, else alone.
func (s *Store) readRecord(o object, off, length int64) ([]byte, error) {
	if length > windowSize || !s.win.follows(o.seq, off) {
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
