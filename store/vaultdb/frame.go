package vaultdb

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/weftsync/weft/protocol/entry"
)

// Record framing in the log files (docs/storage-vault.md):
//
//	uvarint  length of payload (1..maxPayload)
//	4 bytes  CRC-32C (Castagnoli) of payload, little endian
//	payload  the entry's (or membership record's) canonical bytes
//
// A record is valid only if its length is in range, it lies wholly inside
// the file and its checksum matches. Zero is not a valid length, so a
// zero-filled tail (what some file systems leave after a power cut) never
// parses as records.

// maxPayload bounds a record's payload: the largest entry there can be.
const maxPayload = entry.MaxEntrySize

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendFrame appends the framed payload to b.
func appendFrame(b, payload []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(payload)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

// frameSize is the framed size of a payload of n bytes.
func frameSize(n int) int {
	var tmp [binary.MaxVarintLen64]byte
	return binary.PutUvarint(tmp[:], uint64(n)) + 4 + n
}

// parseFrame reads one record at the start of b. It returns the payload (a
// sub-slice of b), the record's total size, and whether it is valid.
func parseFrame(b []byte) (payload []byte, size int, ok bool) {
	payload, size, ok = parseFrameLength(b)
	if !ok || binary.LittleEndian.Uint32(b[size-len(payload)-4:]) != crc32.Checksum(payload, castagnoli) {
		return nil, 0, false
	}
	return payload, size, true
}

// scanResult is what scanFrames found in one file.
type scanResult struct {
	// damage lists bad ranges followed by at least one valid record.
	damage [][2]int64
	// end is where the valid data ends: the file's length, or the start
	// of a bad tail (no valid record after it).
	end int64
}

// scanFrames calls fn for every valid record of data in order, with its
// offset and total size. After a bad record it looks for the next offset
// where a valid record starts and goes on from there; the bytes skipped are
// reported as damage, unless no valid record follows, in which case they
// are a bad tail and end marks where it begins.
func scanFrames(data []byte, fn func(off int64, size int, payload []byte)) scanResult {
	off := 0
	var res scanResult
	for off < len(data) {
		if p, n, ok := parseFrame(data[off:]); ok {
			fn(int64(off), n, p)
			off += n
			continue
		}
		next := resync(data, off+1)
		if next < 0 {
			res.end = int64(off)
			return res
		}
		res.damage = append(res.damage, [2]int64{int64(off), int64(next)})
		off = next
	}
	res.end = int64(off)
	return res
}

// scanFramesTrusted is scanFrames for data whose first trusted bytes a
// log checkpoint vouches for (their CRC-32C matched it, so they are the
// bytes verified before, frame by frame): a record that lies wholly inside
// them is taken without checking its own checksum again, which was a
// second pass over every byte of a large log at each open. Anything that
// does not parse there, and everything after, is checked as scanFrames
// does.
func scanFramesTrusted(data []byte, trusted int64, fn func(off int64, size int, payload []byte)) scanResult {
	off := 0
	for int64(off) < trusted {
		p, n, ok := parseFrameLength(data[off:trusted])
		if !ok {
			break
		}
		fn(int64(off), n, p)
		off += n
	}
	res := scanFrames(data[off:], func(o int64, size int, payload []byte) { fn(int64(off)+o, size, payload) })
	for i := range res.damage {
		res.damage[i][0] += int64(off)
		res.damage[i][1] += int64(off)
	}
	res.end += int64(off)
	return res
}

// parseFrameLength is parseFrame without the checksum test.
func parseFrameLength(b []byte) (payload []byte, size int, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n == 0 || n > maxPayload {
		return nil, 0, false
	}
	h := k + 4
	if len(b)-h < int(n) {
		return nil, 0, false
	}
	return b[h : h+int(n)], h + int(n), true
}

// resync returns the first offset at or after from where a valid record
// starts, or -1. It costs a checksum per plausible offset, which is fine for
// the rare damaged file and the short tail a crash leaves.
func resync(data []byte, from int) int {
	for p := from; p < len(data); p++ {
		if _, _, ok := parseFrame(data[p:]); ok {
			return p
		}
	}
	return -1
}
