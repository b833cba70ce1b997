package vaultdb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// entryKey names an entry by author and sequence number.
type entryKey struct {
	author keys.DeviceID
	seq    uint64
}

// entryInfo is what the scan learns of one verified entry.
type entryInfo struct {
	at    loc
	cid   cid.Cid
	seen  bool // the index holds its location (set while checking the index)
	cseen bool // the index holds its CID key
}

// logScan is the verified content of the segment files.
type logScan struct {
	entries map[entryKey]*entryInfo
	heads   map[keys.DeviceID]entry.Head
	last    uint32 // last segment number, 0 if none
	lastEnd int64  // its valid length

	// loaded is the checkpoint found at open (nil if none or unusable);
	// verified is the prefix this scan verified, for the next one.
	loaded   *checkpoint
	verified verifiedPrefix
}

// Gap is an author's log cut short at Open: entries from Seq on were
// missing or dropped, and Dropped entries beyond the gap were discarded
// because they no longer chain. The node fetches them again from peers.
type Gap struct {
	Author  keys.DeviceID
	Seq     uint64 // first sequence number not held
	Dropped int
}

// scanLogs reads every segment, truncates a bad tail of the last one,
// validates every entry against its author's previous head, and fills in
// rep. Only the last segment is ever modified.
func scanLogs(fsys FS, dir string, vault keys.VaultID, rep *OpenReport) (*logScan, error) {
	segs, err := listSegments(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("listing segments: %w", err)
	}
	s := &logScan{entries: map[entryKey]*entryInfo{}, heads: map[keys.DeviceID]entry.Head{}}
	ck, err := loadCheckpoint(fsys, filepath.Dir(dir), vault)
	if err != nil {
		rep.CheckpointError = err.Error() // ignored: everything is verified
	}
	s.loaded = ck
	trusting := ck != nil
	// pending holds authentic entries that arrived before their
	// predecessor (after damage, a refetched entry lands later in the log).
	pending := map[entryKey]pendingEntry{}
	// One buffer serves every segment: nothing keeps a segment's bytes
	// past its turn (acceptAll drops its entries, which share them, and
	// pending copies what it keeps), and a fresh buffer per segment was
	// the log's size in allocations at every open.
	var buf []byte
	for i, n := range segs {
		name := filepath.Join("log", segName(n))
		path := filepath.Join(dir, segName(n))
		data, err := readAllInto(fsys, path, buf)
		buf = data
		if err != nil {
			return nil, fmt.Errorf("reading segment %d: %w", n, err)
		}
		var trustEnd int64
		var trustCRC uint32
		if trusting {
			trustEnd, trustCRC, trusting = ck.trusted(i, n, data)
		}
		s.verified.begin(n, segSum{seg: n, size: trustEnd, crc: trustCRC})
		var frames []frameAt
		res := scanFramesTrusted(data, trustEnd, func(off int64, size int, p []byte) {
			frames = append(frames, frameAt{off: off, size: size, p: p, trusted: off+int64(size) <= trustEnd})
		})
		s.acceptAll(vault, n, frames, pending, rep)
		for _, d := range res.damage {
			rep.Damage = append(rep.Damage, Damage{File: name, Start: d[0], End: d[1]})
		}
		validEnd := int64(len(data))
		if res.end < int64(len(data)) {
			if i < len(segs)-1 {
				// Only the last segment is ever appended to, so a bad
				// tail elsewhere is damage, not a torn write.
				rep.Damage = append(rep.Damage, Damage{File: name, Start: res.end, End: int64(len(data))})
			} else {
				if err := truncateTail(fsys, path, res.end); err != nil {
					return nil, fmt.Errorf("truncating segment %d: %w", n, err)
				}
				rep.Truncated = append(rep.Truncated, Damage{File: name, Start: res.end, End: int64(len(data))})
				validEnd = res.end
			}
		}
		s.verified.finish(data, validEnd)
		s.last, s.lastEnd = n, res.end
	}
	s.resolve(vault, pending, rep)
	return s, nil
}

type pendingEntry struct {
	at  loc
	raw []byte
}

// frameAt is one record of a segment: its offset, framed size, payload,
// and whether the log checkpoint vouches for it.
type frameAt struct {
	off     int64
	size    int
	p       []byte
	trusted bool
}

// acceptWindow bounds the payload bytes of one batch of acceptAll (the
// entries decoded at once and held until their chain is checked).
const acceptWindow = 8 << 20

// acceptAll accepts the records of segment seg in order, in batches of at
// most acceptWindow bytes or one record per core, whichever is more: each
// batch is decoded and (outside the trusted prefix) its signatures
// checked on every core (entry.PrepareStored), then its chain checked in
// order (accept). Decoding was one core's work of most of an open of a
// large log.
func (s *logScan) acceptAll(vault keys.VaultID, seg uint32, frames []frameAt, pending map[entryKey]pendingEntry, rep *OpenReport) {
	type prepared struct {
		e   *entry.Entry
		err error
	}
	var prep []prepared
	workers := runtime.GOMAXPROCS(0) // a batch holds at least one record per core
	for i := 0; i < len(frames); {
		j, bytes := i, 0
		for j < len(frames) && (j-i < workers || bytes+len(frames[j].p) <= acceptWindow) {
			bytes += len(frames[j].p)
			j++
		}
		batch := frames[i:j]
		prep = slices.Grow(prep[:0], len(batch))[:len(batch)]
		parallelEach(len(batch), func(k int) {
			prep[k].e, prep[k].err = entry.PrepareStored(batch[k].p, vault, !batch[k].trusted)
		})
		for k, f := range batch {
			if s.accept(loc{seg: seg, off: f.off, n: uint32(f.size)}, f.p, f.trusted, prep[k].e, prep[k].err, pending, rep) {
				s.verified.held(f.off, f.size)
			}
			prep[k] = prepared{} // let the entry go
		}
		i = j
	}
}

// parallelEach calls fn(0..n-1) on up to GOMAXPROCS goroutines and returns
// when every call has.
func parallelEach(n int, fn func(int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for k := range n {
			fn(k)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for k := int(next.Add(1) - 1); k < n; k = int(next.Add(1) - 1) {
				fn(k)
			}
		})
	}
	wg.Wait()
}

// accept checks one prepared record (e, or perr from entry.PrepareStored:
// decoding, vault and, outside the trusted prefix, the signature) against
// its author's head. It says whether the record is held: added, or a
// duplicate of an entry held.
func (s *logScan) accept(at loc, p []byte, trusted bool, e *entry.Entry, perr error, pending map[entryKey]pendingEntry, rep *OpenReport) bool {
	rep.Records++
	err := perr
	if err == nil {
		e, err = e.FollowsStored(s.head(e.Author()))
	}
	switch {
	case err == nil:
		s.add(e, at)
		if trusted {
			rep.Trusted++
		}
		return true
	case e != nil && errors.Is(err, entry.ErrSeqGap):
		k := entryKey{e.Author(), e.Seq()}
		if _, ok := pending[k]; !ok {
			pending[k] = pendingEntry{at: at, raw: append([]byte(nil), p...)}
		} else {
			rep.Duplicates++
		}
		return false
	case e != nil && (errors.Is(err, entry.ErrDuplicate) || errors.Is(err, entry.ErrSeqReplay)):
		if old, ok := s.entries[entryKey{e.Author(), e.Seq()}]; ok && old.cid.Equals(e.CID()) {
			rep.Duplicates++
			return true
		}
		rep.Dropped++
		return false
	default:
		rep.Dropped++
		return false
	}
}

// head returns author's head so far (the zero Head if none).
func (s *logScan) head(author keys.DeviceID) entry.Head { return s.heads[author] }

func (s *logScan) add(e *entry.Entry, at loc) {
	s.entries[entryKey{e.Author(), e.Seq()}] = &entryInfo{at: at, cid: e.CID()}
	s.heads[e.Author()] = e.Head()
}

// resolve chains pending entries onto their authors' heads where they now
// fit and drops the rest, recording a Gap for each author cut short.
func (s *logScan) resolve(vault keys.VaultID, pending map[entryKey]pendingEntry, rep *OpenReport) {
	byAuthor := map[keys.DeviceID][]uint64{}
	for k := range pending {
		byAuthor[k.author] = append(byAuthor[k.author], k.seq)
	}
	authors := make([]keys.DeviceID, 0, len(byAuthor))
	for a := range byAuthor {
		authors = append(authors, a)
	}
	sort.Slice(authors, func(i, j int) bool { return string(authors[i][:]) < string(authors[j][:]) })
	for _, a := range authors {
		seqs := byAuthor[a]
		sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
		for {
			h := s.heads[a]
			p, ok := pending[entryKey{a, h.Seq + 1}]
			if !ok {
				break
			}
			e, err := entry.ValidateStored(p.raw, vault, s.head)
			if err != nil {
				break // counted below with the rest beyond the gap
			}
			delete(pending, entryKey{a, h.Seq + 1})
			s.add(e, p.at)
		}
		g := Gap{Author: a, Seq: s.heads[a].Seq + 1}
		for _, q := range seqs {
			if _, ok := pending[entryKey{a, q}]; !ok {
				continue
			}
			if q <= s.heads[a].Seq {
				rep.Duplicates++
			} else {
				g.Dropped++
			}
		}
		if g.Dropped > 0 {
			rep.Gaps = append(rep.Gaps, g)
			rep.Dropped += g.Dropped
		}
	}
}

// truncateTail cuts a file to size and syncs it.
func truncateTail(fsys FS, path string, size int64) error {
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
