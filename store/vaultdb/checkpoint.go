package vaultdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/weftsync/weft/protocol/keys"
)

// The log checkpoint says which prefix of the log segments this device has
// already verified, entry by entry and signature by signature: at an
// earlier Open, or at Append, which validates every entry before it writes
// it. The next Open checks the prefix's bytes against the checkpoint (each
// segment's length and CRC-32C) and then re-checks only the chain of the
// entries inside it, not their Ed25519 signatures, which were most of the
// cost of opening a large vault (docs/storage-vault.md, "The log
// checkpoint"). Everything after the prefix is verified as before.
//
// Layout of <dir>/log.checkpoint, little endian:
//
//	8 bytes   magic "weftlck1"
//	32 bytes  vault ID
//	4 bytes   number of segments n (at most maxCheckpointSegs)
//	n times   4 bytes segment number, 8 bytes length, 4 bytes CRC-32C of
//	          the segment's first length bytes
//	4 bytes   CRC-32C of everything before it
//
// The segments are consecutive from the first segment of the log; only the
// last may be covered in part. A checkpoint that does not decode, names
// another vault, or does not match the segments on disk is ignored: the
// whole log is verified, as without one.
const checkpointName = "log.checkpoint"

var checkpointMagic = [8]byte{'w', 'e', 'f', 't', 'l', 'c', 'k', '1'}

// maxCheckpointSegs bounds the segment count a checkpoint may claim; a
// segment holds 8 MiB by default (8 TiB of log), so this is far beyond
// any vault.
const maxCheckpointSegs = 1 << 20

const (
	checkpointHead = 8 + 32 + 4
	checkpointSeg  = 4 + 8 + 4
)

// ErrBadCheckpoint reports a log checkpoint that does not decode.
var ErrBadCheckpoint = errors.New("vaultdb: bad log checkpoint")

// segSum is a verified prefix of one segment: its first size bytes, whose
// CRC-32C is crc.
type segSum struct {
	seg  uint32
	size int64
	crc  uint32
}

// checkpoint is the decoded log checkpoint.
type checkpoint struct {
	vault keys.VaultID
	segs  []segSum
}

func encodeCheckpoint(c checkpoint) []byte {
	b := make([]byte, 0, checkpointHead+checkpointSeg*len(c.segs)+4)
	b = append(b, checkpointMagic[:]...)
	b = append(b, c.vault[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.segs)))
	for _, s := range c.segs {
		b = binary.LittleEndian.AppendUint32(b, s.seg)
		b = binary.LittleEndian.AppendUint64(b, uint64(s.size))
		b = binary.LittleEndian.AppendUint32(b, s.crc)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeCheckpoint parses a log checkpoint. It checks the framing (magic,
// length, CRC) and that the segments are consecutive with lengths in
// range; whether they match the files is the caller's check.
func decodeCheckpoint(b []byte) (checkpoint, error) {
	var c checkpoint
	if len(b) < checkpointHead+4 {
		return c, fmt.Errorf("%d bytes: %w", len(b), ErrBadCheckpoint)
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return c, fmt.Errorf("checksum mismatch: %w", ErrBadCheckpoint)
	}
	if [8]byte(body[:8]) != checkpointMagic {
		return c, fmt.Errorf("magic %q: %w", body[:8], ErrBadCheckpoint)
	}
	c.vault = keys.VaultID(body[8:40])
	n := binary.LittleEndian.Uint32(body[40:44])
	if n > maxCheckpointSegs || uint64(len(body)-checkpointHead) != uint64(n)*checkpointSeg {
		return c, fmt.Errorf("%d segments in %d bytes: %w", n, len(b), ErrBadCheckpoint)
	}
	c.segs = make([]segSum, n)
	p := body[checkpointHead:]
	for i := range c.segs {
		s := segSum{
			seg:  binary.LittleEndian.Uint32(p[0:4]),
			size: int64(binary.LittleEndian.Uint64(p[4:12])),
			crc:  binary.LittleEndian.Uint32(p[12:16]),
		}
		p = p[checkpointSeg:]
		if s.seg == 0 || (i > 0 && s.seg != c.segs[i-1].seg+1) {
			return c, fmt.Errorf("segment %d after %d: %w", s.seg, segBefore(c.segs, i), ErrBadCheckpoint)
		}
		if s.size < 0 || s.size > maxSegmentBytes {
			return c, fmt.Errorf("segment %d of %d bytes: %w", s.seg, s.size, ErrBadCheckpoint)
		}
		c.segs[i] = s
	}
	return c, nil
}

// maxSegmentBytes bounds a segment length a checkpoint may claim (a
// segment is at most Config.SegmentSize plus one record).
const maxSegmentBytes = 1 << 40

// segBefore is the segment number before the i-th of segs, for errors.
func segBefore(segs []segSum, i int) uint32 {
	if i == 0 {
		return 0
	}
	return segs[i-1].seg
}

// loadCheckpoint reads the checkpoint in dir for vault. It returns nil,
// nil when there is none; a checkpoint that cannot be used comes back as
// an error for the report and is then ignored.
func loadCheckpoint(fsys FS, dir string, vault keys.VaultID) (*checkpoint, error) {
	b, err := readAll(fsys, filepath.Join(dir, checkpointName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading log checkpoint: %w", err)
	}
	c, err := decodeCheckpoint(b)
	if err != nil {
		return nil, err
	}
	if c.vault != vault {
		return nil, fmt.Errorf("checkpoint of vault %s: %w", c.vault, ErrBadCheckpoint)
	}
	return &c, nil
}

// saveCheckpoint replaces the checkpoint in dir, durably.
func saveCheckpoint(fsys FS, dir string, c checkpoint) error {
	if err := writeDurable(fsys, filepath.Join(dir, checkpointName), encodeCheckpoint(c)); err != nil {
		return fmt.Errorf("writing log checkpoint: %w", err)
	}
	return nil
}

// trusted returns how many leading bytes of segment n, the i-th segment
// of the log, whose content is data, the checkpoint vouches for (0 if it
// does not match) and their CRC-32C, and whether it vouches for all of
// data, the condition for trusting anything in the next segment.
func (c *checkpoint) trusted(i int, n uint32, data []byte) (size int64, crc uint32, all bool) {
	if c == nil || i >= len(c.segs) {
		return 0, 0, false
	}
	s := c.segs[i]
	if s.seg != n || s.size > int64(len(data)) || crc32.Checksum(data[:s.size], castagnoli) != s.crc {
		return 0, 0, false
	}
	return s.size, s.crc, s.size == int64(len(data))
}

// verifiedPrefix builds, during the scan, the verified prefix of the log
// that the next checkpoint records: it grows record by record while the
// records held (verified, or harmless duplicates) follow each other with
// nothing between them, and ends for good at the first bytes that are not
// a held record: one dropped or left pending, or damage.
type verifiedPrefix struct {
	segs   []segSum
	closed bool   // the prefix is final
	cur    uint32 // segment being scanned
	end    int64  // end of the held records that begin it
	// known is a prefix of the segment whose CRC-32C is already known
	// (the checkpoint's, just checked), so finish hashes only what lies
	// past it.
	known segSum
}

// begin starts segment n, whose first known.size bytes have the CRC-32C
// known.crc (a zero size when none is known).
func (v *verifiedPrefix) begin(n uint32, known segSum) {
	if !v.closed {
		v.cur, v.end, v.known = n, 0, known
	}
}

// held notes a record at [off, off+size) that the scan holds. After bytes
// that were not held, end no longer reaches off, and stays where it is.
func (v *verifiedPrefix) held(off int64, size int) {
	if !v.closed && off == v.end {
		v.end = off + int64(size)
	}
}

// finish closes the current segment, whose content is data and whose
// valid length (what stays on disk) is validEnd.
func (v *verifiedPrefix) finish(data []byte, validEnd int64) {
	if v.closed {
		return
	}
	var crc uint32
	if k := v.known; k.size > 0 && k.size <= v.end {
		crc = crc32.Update(k.crc, castagnoli, data[k.size:v.end])
	} else {
		crc = crc32.Checksum(data[:v.end], castagnoli)
	}
	v.segs = append(v.segs, segSum{seg: v.cur, size: v.end, crc: crc})
	v.closed = v.end != validEnd
}

// complete says whether the prefix covers the whole log.
func (v *verifiedPrefix) complete() bool { return !v.closed }

// readFrom reads the file at path from offset off up to end.
func readFrom(fsys FS, path string, off, end int64) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, end-off)
	if _, err := f.ReadAt(b, off); err != nil && !(errors.Is(err, io.EOF) && len(b) == 0) {
		return nil, err
	}
	return b, nil
}

// extend returns the checkpoint for a log that, since the scan recorded
// prefix (complete: covering every segment to its valid end), grew by
// appends only: the segments up to last now end at sizes (size(n) for n in
// order, the last one's durable length). It reads only the bytes appended.
func extend(fsys FS, dir string, prefix []segSum, last uint32, size func(uint32) (int64, error)) ([]segSum, error) {
	out := slices.Clone(prefix)
	first := uint32(1)
	if len(out) > 0 {
		first = out[0].seg
	}
	for n := first; n <= last && last != 0; n++ {
		i := int(n - first)
		var cur segSum
		if i < len(out) {
			cur = out[i]
		} else {
			cur = segSum{seg: n}
		}
		end, err := size(n)
		if err != nil {
			return nil, err
		}
		if end < cur.size {
			return nil, fmt.Errorf("segment %d shrank from %d to %d bytes", n, cur.size, end)
		}
		if end > cur.size {
			b, err := readFrom(fsys, filepath.Join(dir, segName(n)), cur.size, end)
			if err != nil {
				return nil, fmt.Errorf("reading segment %d: %w", n, err)
			}
			// The next Open takes the prefix's records without their own
			// checksums (scanFramesTrusted), so what is vouched for here
			// must be whole records whose checksums hold, as read back.
			if res := scanFrames(b, func(int64, int, []byte) {}); len(res.damage) > 0 || res.end != int64(len(b)) {
				return nil, fmt.Errorf("segment %d: appended bytes at %d do not read back as whole records", n, cur.size)
			}
			cur.crc = crc32.Update(cur.crc, castagnoli, b)
			cur.size = end
		}
		if i < len(out) {
			out[i] = cur
		} else {
			out = append(out, cur)
		}
	}
	return out, nil
}
