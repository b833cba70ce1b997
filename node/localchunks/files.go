package localchunks

import (
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/carry"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/keyring"
	"github.com/weftsync/weft/node/seal"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/store/vaultdb"
)

// Files re-creates chunks from the folder's files: it knows where
// each chunk's plaintext lies (kept from the folder index by Indexed, with
// the stat each file had when it was scanned) and reads, checks and seals
// those bytes back into the chunk. It has a lock of its own, a leaf:
// serving a chunk to a peer takes no lock of the vault's, so a peer's
// fetch and the vault's own work do not wait on each other.
type Files struct {
	fs    folder.FS
	crypt *keyring.Ring

	mu     sync.Mutex // guards places
	places map[cid.Cid][]Location
}

// Location says where a chunk's plaintext lies in the folder, and
// what the file there looked like when it was scanned.
type Location struct {
	Path   string
	Offset int64
	Size   uint32
	file   fileStat
}

// fileStat is what a file's stat said when the index recorded it: a file
// that no longer matches may hold other bytes.
type fileStat struct {
	size  uint64
	mtime int64
	inode uint64
}

// maxLocations bounds how many places per chunk are remembered (a
// chunk of zeros may be in thousands of files; a few places are enough to
// find one that still holds it).
const maxLocations = 4

func NewFiles(fs folder.FS, cr *keyring.Ring) *Files {
	return &Files{fs: fs, crypt: cr, places: map[cid.Cid][]Location{}}
}

// Indexed moves path's chunk locations from what the index held there
// (old, when had) to rec (Kind 0: nothing). The vault calls it whenever
// its index changes (node's setIndexLocked).
func (fc *Files) Indexed(path string, old vaultdb.Record, had bool, rec vaultdb.Record) {
	if !had && len(rec.Chunks) == 0 {
		return
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if had {
		for _, c := range old.Chunks {
			locs := slices.DeleteFunc(fc.places[c.CID], func(l Location) bool { return l.Path == path })
			if len(locs) == 0 {
				delete(fc.places, c.CID)
			} else {
				fc.places[c.CID] = locs
			}
		}
	}
	if rec.Kind == 0 {
		return
	}
	st := fileStat{size: rec.Size, mtime: rec.MTime, inode: rec.Inode}
	var off int64
	for _, c := range rec.Chunks {
		locs := fc.places[c.CID]
		if len(locs) < maxLocations && !slices.ContainsFunc(locs, func(l Location) bool { return l.Path == path }) {
			fc.places[c.CID] = append(locs, Location{Path: path, Offset: off, Size: c.Size, file: st})
		}
		off += int64(c.Size)
	}
}

// Places returns where the folder is said to hold chunk c (at most a
// few places), for the device audit and tests.
func (fc *Files) Places(c cid.Cid) []Location {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return slices.Clone(fc.places[c])
}

// Has reports whether some folder file is said to hold chunk c.
func (fc *Files) Has(c cid.Cid) bool {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return len(fc.places[c]) > 0
}

// Envelope re-creates a chunk's envelope from a folder file only (what
// the keeper copies into the version store), newly allocated.
func (fc *Files) Envelope(c cid.Cid) ([]byte, error) {
	env, _, err := fc.ChunkInto(c, nil, nil, true)
	if err != nil {
		return nil, err
	}
	return env, nil
}

// ErrNotLocal: no file of the folder holds the chunk as the index says.
var ErrNotLocal = carry.ErrNotLocal

// ChunkInto re-creates chunk c from a file of the folder that the index
// says holds it, reading the plaintext into scratch (grown when short)
// and, when env, appending the envelope to dst. It returns dst
// with the envelope appended and the plaintext, which aliases scratch's
// array.
func (fc *Files) ChunkInto(c cid.Cid, scratch, dst []byte, env bool) (out, plain []byte, err error) {
	fc.mu.Lock()
	locs := slices.Clone(fc.places[c])
	fc.mu.Unlock()
	if len(locs) == 0 {
		return dst, scratch, ErrNotLocal
	}
	for _, loc := range locs {
		out, plain, err = fc.chunkAt(c, loc, scratch, dst, env)
		if err == nil {
			return out, plain, nil
		}
		scratch = plain[:0]
	}
	return dst, scratch, err
}

// chunkAt re-creates chunk c from one place where the index says it
// lies, refusing a file that changed since it was scanned (its stat, then
// what it holds now): it reads the plaintext into scratch (grown when
// short) and, when env, appends the envelope to dst. What the file holds
// is checked by sealing it and comparing the CID; when only the plaintext
// is wanted and its identity is known (crypt.IDs), by hashing the
// plaintext and comparing the identity instead, a third of the work. It
// returns dst with the envelope appended, and the plaintext (in scratch's
// array, also on error, so the caller can reuse it).
func (fc *Files) chunkAt(c cid.Cid, loc Location, scratch, dst []byte, env bool) (out, plain []byte, err error) {
	info, err := fc.fs.Lstat(loc.Path)
	if err != nil {
		return dst, scratch, err
	}
	if info.Kind != folder.KindFile || info.Size != int64(loc.file.size) || info.MTime != loc.file.mtime || info.Inode != loc.file.inode {
		return dst, scratch, fmt.Errorf("%s changed since it was scanned: %w", loc.Path, ErrNotLocal)
	}
	f, err := fc.fs.Open(loc.Path)
	if err != nil {
		return dst, scratch, err
	}
	defer f.Close()
	buf := slices.Grow(scratch[:0], int(loc.Size))[:loc.Size]
	if err := readAt(f, buf, loc.Offset); err != nil {
		return dst, buf, fmt.Errorf("reading %s: %w", loc.Path, err)
	}
	if known, ok := fc.crypt.IDs().Get(c); ok {
		if ek, err := fc.crypt.Keys(known.Epoch); err == nil {
			k := chunk.KeysFrom(ek)
			if !env {
				if chunk.PlainID(k, buf) != known.ID {
					return dst, buf, fmt.Errorf("%s no longer holds chunk %s: %w", loc.Path, c, ErrNotLocal)
				}
				return dst, buf, nil
			}
			grown := slices.Grow(dst, chunk.Overhead+len(buf))
			if sh := known.Shape; sh.Known {
				// This device's own sealing, re-created with its
				// compression choice and checked by its tag. Another tag
				// means other plaintext: sealing it again could not give
				// the CID either.
				out, err := chunk.AppendEnvelopeAs(grown, k, known.ID, buf, sh.Compressed)
				if err != nil {
					return dst, buf, err
				}
				if tag, ok := chunk.Tag(out[len(grown):]); ok && tag == sh.Tag {
					return out, buf, nil
				}
				return dst, buf, fmt.Errorf("%s no longer holds chunk %s: %w", loc.Path, c, ErrNotLocal)
			}
			if s, err := chunk.AppendSealAs(grown, k, known.ID, buf); err == nil && s.CID.Equals(c) {
				fc.crypt.IDs().Add(c, known.Epoch, known.ID, true, seal.ShapeOf(s.Envelope)) // sealed here now
				return grown[:len(grown)+len(s.Envelope)], buf, nil
			}
		}
	}
	out, ok, err := fc.crypt.SealLocalAppend(dst, c, buf)
	if err != nil {
		return dst, buf, err
	}
	if !ok {
		return dst, buf, fmt.Errorf("%s no longer holds chunk %s: %w", loc.Path, c, ErrNotLocal)
	}
	return out, buf, nil
}

// readAt fills buf from offset off of f, using ReadAt when the file offers
// it and skipping forward otherwise.
func readAt(f folder.File, buf []byte, off int64) error {
	if ra, ok := f.(io.ReaderAt); ok {
		_, err := ra.ReadAt(buf, off)
		return err
	}
	if s, ok := f.(io.Seeker); ok {
		if _, err := s.Seek(off, io.SeekStart); err != nil {
			return err
		}
	} else if _, err := io.CopyN(io.Discard, f, off); err != nil {
		return err
	}
	_, err := io.ReadFull(f, buf)
	return err
}
