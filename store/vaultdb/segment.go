package vaultdb

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Segments are the files of the entry log: DIR/log/NNNNNNNNNN.seg, numbered
// from 1, appended to in order. Only the last one is ever written.

const segSuffix = ".seg"

// DefaultSegmentSize is the size at which a segment is closed and the next
// begun. Open reads one segment at a time into memory, so this bounds
// what it holds beside the entries it decodes: 64 MiB segments made a
// restart with 100,000 notes peak about 60 MiB higher (docs/benchmarks.md,
// "Footprint at 100,000 small files: one copy of each version").
const DefaultSegmentSize = 8 << 20

// loc is where a record lives: segment number, offset, total framed size.
type loc struct {
	seg uint32
	off int64
	n   uint32
}

func segName(n uint32) string { return fmt.Sprintf("%010d%s", n, segSuffix) }

// listSegments returns the segment numbers in dir, ascending. Files that are
// not segments are ignored.
func listSegments(fsys FS, dir string) ([]uint32, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []uint32
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, segSuffix) || e.IsDir() {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(name, segSuffix), 10, 32)
		if err != nil || n == 0 {
			continue
		}
		out = append(out, uint32(n))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// readAll reads a whole file through fsys.
func readAll(fsys FS, path string) ([]byte, error) { return readAllInto(fsys, path, nil) }

// readAllInto is readAll reading into buf when it has room for the file
// (the result then shares buf's array).
func readAllInto(fsys FS, path string, buf []byte) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := buf[:0]
	if int64(cap(b)) < st.Size() {
		b = make([]byte, st.Size())
	}
	b = b[:st.Size()]
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:n], nil // short only if the file shrank since Stat: no bytes of buf's last use
}

// segWriter appends framed records to the last segment. It is owned by the
// commit loop and not safe for concurrent use.
type segWriter struct {
	fsys FS
	dir  string
	max  int64

	seg  uint32 // current segment number (0: none yet)
	f    File   // current segment, open for writing; nil if none yet
	size int64  // bytes of the current segment known durable

	// dirty is set when a failed append may have left bytes past size that
	// could not be cut off; the next append first truncates to size.
	dirty bool

	syncs int64 // fsyncs of segment files and of the log directory
}

// newSegWriter continues segment last (0 if there is none) whose valid
// length is size.
func newSegWriter(fsys FS, dir string, max int64, last uint32, size int64) (*segWriter, error) {
	w := &segWriter{fsys: fsys, dir: dir, max: max}
	if last == 0 {
		return w, nil
	}
	f, err := fsys.OpenFile(filepath.Join(dir, segName(last)), os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("opening segment %d: %w", last, err)
	}
	w.seg, w.f, w.size = last, f, size
	return w, nil
}

// append writes the framed payloads and makes them durable. On success it
// returns each record's location. On failure nothing it wrote is kept: the
// current segment is cut back to its durable length and segments it created
// are removed, so a retry starts from the same state. (After a failed fsync
// the kernel may have dropped the dirty pages and marked them clean, so the
// unsynced bytes are treated as lost, never re-synced: fsyncgate.)
func (w *segWriter) append(payloads [][]byte) ([]loc, error) {
	if w.dirty {
		if err := w.f.Truncate(w.size); err != nil {
			return nil, fmt.Errorf("cutting back segment %d: %w", w.seg, err)
		}
		w.dirty = false
	}
	startSeg, startSize, startF := w.seg, w.size, w.f
	var created []uint32
	var createdF []File
	locs := make([]loc, len(payloads))
	type pending struct {
		f   File
		off int64
		buf []byte
	}
	var parts []pending
	cur := pending{f: w.f, off: w.size}
	seg, size := w.seg, w.size
	for i, p := range payloads {
		n := int64(frameSize(len(p)))
		if seg == 0 || (size > 0 && size+n > w.max) {
			if len(cur.buf) > 0 {
				parts = append(parts, cur)
			}
			seg++
			f, err := w.fsys.OpenFile(filepath.Join(w.dir, segName(seg)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
			if err != nil {
				w.rollback(startSeg, startSize, startF, created, createdF)
				return nil, fmt.Errorf("creating segment %d: %w", seg, err)
			}
			created = append(created, seg)
			createdF = append(createdF, f)
			cur = pending{f: f}
			size = 0
		}
		locs[i] = loc{seg: seg, off: size, n: uint32(n)}
		cur.buf = appendFrame(cur.buf, p)
		size += n
	}
	parts = append(parts, cur)
	for _, pt := range parts {
		if _, err := pt.f.WriteAt(pt.buf, pt.off); err != nil {
			w.rollback(startSeg, startSize, startF, created, createdF)
			return nil, fmt.Errorf("writing segment: %w", err)
		}
	}
	for _, pt := range parts {
		w.syncs++
		if err := pt.f.Sync(); err != nil {
			w.rollback(startSeg, startSize, startF, created, createdF)
			return nil, fmt.Errorf("syncing segment: %w", err)
		}
	}
	if len(created) > 0 {
		w.syncs++
		if err := syncDir(w.fsys, w.dir); err != nil {
			w.rollback(startSeg, startSize, startF, created, createdF)
			return nil, fmt.Errorf("syncing log directory: %w", err)
		}
		if startF != nil {
			startF.Close()
		}
		for _, f := range createdF[:len(createdF)-1] {
			f.Close()
		}
		w.f = createdF[len(createdF)-1]
	}
	w.seg, w.size = seg, size
	return locs, nil
}

// rollback undoes a failed append: it cuts the starting segment back to its
// durable size and removes the segments the append created.
func (w *segWriter) rollback(seg uint32, size int64, f File, created []uint32, createdF []File) {
	for i, n := range created {
		createdF[i].Close()
		w.fsys.Remove(filepath.Join(w.dir, segName(n)))
	}
	if len(created) > 0 {
		syncDir(w.fsys, w.dir)
	}
	w.seg, w.size, w.f = seg, size, f
	if f != nil && f.Truncate(size) != nil {
		w.dirty = true
	}
}

func (w *segWriter) close() error {
	if w.f == nil {
		return nil
	}
	return w.f.Close()
}

// maxOpenSegments bounds the read handles a log keeps open: a replay or
// a peer reading a whole log touches every segment, and a relay holds a
// log per vault (1 GiB of log is 128 segments of 8 MiB).
const maxOpenSegments = 16

// segReaders keeps read handles to segments, opened on first use; past
// maxOpenSegments the least recently used one no read is using is closed.
type segReaders struct {
	fsys FS
	dir  string

	// mu guards the fields below.
	mu    sync.Mutex
	files map[uint32]*openSegment
	clock uint64 // counts acquires, for least recently used
}

// openSegment is one read handle: users reads are using it now.
type openSegment struct {
	f     File
	users int
	used  uint64
}

// read returns the payload of the record at l, checking its framing and
// checksum; a bad record is ErrCorrupt.
func (r *segReaders) read(l loc) ([]byte, error) {
	f, err := r.acquire(l.seg)
	if err != nil {
		return nil, err
	}
	defer r.release(l.seg)
	buf := make([]byte, l.n)
	if _, err := f.ReadAt(buf, l.off); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("segment %d offset %d: past end: %w", l.seg, l.off, ErrCorrupt)
		}
		return nil, fmt.Errorf("reading segment %d: %w", l.seg, err)
	}
	p, n, ok := parseFrame(buf)
	if !ok || n != len(buf) {
		return nil, fmt.Errorf("segment %d offset %d: bad record: %w", l.seg, l.off, ErrCorrupt)
	}
	return p, nil
}

// acquire returns a read handle to segment seg, held for the caller until
// release.
func (r *segReaders) acquire(seg uint32) (File, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clock++
	if s, ok := r.files[seg]; ok {
		s.users++
		s.used = r.clock
		return s.f, nil
	}
	f, err := r.fsys.OpenFile(filepath.Join(r.dir, segName(seg)), os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("opening segment %d: %w", seg, err)
	}
	if r.files == nil {
		r.files = map[uint32]*openSegment{}
	}
	r.files[seg] = &openSegment{f: f, users: 1, used: r.clock}
	r.evictLocked()
	return f, nil
}

// release ends a use of seg's handle begun by acquire.
func (r *segReaders) release(seg uint32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.files[seg]; ok {
		s.users--
	}
	r.evictLocked()
}

// evictLocked closes least recently used handles no read is using until at
// most maxOpenSegments are open (more stay open only while in use).
func (r *segReaders) evictLocked() {
	for len(r.files) > maxOpenSegments {
		victim, found := uint32(0), false
		for seg, s := range r.files {
			if s.users == 0 && (!found || s.used < r.files[victim].used) {
				victim, found = seg, true
			}
		}
		if !found {
			return
		}
		r.files[victim].f.Close()
		delete(r.files, victim)
	}
}

// openCount is how many segment handles are open (for tests).
func (r *segReaders) openCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.files)
}

func (r *segReaders) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.files {
		s.f.Close()
	}
	r.files = nil
}
