package s3store

import (
	"encoding/binary"
	"fmt"
)

// The goleveldb index holds these keys:
//
//	"c" + CID bytes             -> loc (28 bytes, below): where the chunk's record is
//	"x" + seq (8) + offset (8)  -> CID bytes: the records of an object the index uses
//	"o" + seq (8)               -> object size (8, BE) + object name: an object the
//	                               index knows
//	"r" + seq (8)               -> unix nanoseconds (8, BE): the object was rewritten
//	                               by GC at that time and is to be deleted
//	"mscrub.cursor"             -> seq (8): the object the next scrub step starts after
//	"mscrub.last"               -> unix nanoseconds (8): end of the last scrub pass
//
// Every integer is big endian, so objects iterate in sequence order.
const (
	prefixChunk   = 'c'
	prefixRecord  = 'x'
	prefixObject  = 'o'
	prefixRetired = 'r'
)

var (
	keyScrubCursor = []byte("mscrub.cursor")
	keyScrubLast   = []byte("mscrub.last")
)

func chunkKey(cidBytes []byte) []byte {
	return append([]byte{prefixChunk}, cidBytes...)
}

func seqKey(prefix byte, seq uint64) []byte {
	k := make([]byte, 9)
	k[0] = prefix
	binary.BigEndian.PutUint64(k[1:], seq)
	return k
}

func recordKey(seq uint64, off int64) []byte {
	k := make([]byte, 17)
	k[0] = prefixRecord
	binary.BigEndian.PutUint64(k[1:], seq)
	binary.BigEndian.PutUint64(k[9:], uint64(off))
	return k
}

// parseRecordKey returns the object and offset of an "x" key.
func parseRecordKey(k []byte) (seq uint64, off int64, ok bool) {
	if len(k) != 17 || k[0] != prefixRecord {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(k[1:9]), int64(binary.BigEndian.Uint64(k[9:])), true
}

func parseSeqKey(k []byte) (uint64, bool) {
	if len(k) != 9 {
		return 0, false
	}
	return binary.BigEndian.Uint64(k[1:]), true
}

// loc is an index value: where a chunk's record is, and when the chunk was
// first stored (or last put again), which GC's grace period reads.
//
//	offset size field
//	0      8    object sequence number
//	8      8    offset of the record in the object
//	16     4    length of the whole record
//	20     8    unix seconds the chunk was stored
type loc struct {
	seq    uint64
	off    int64
	length int64
	stored int64
}

const locSize = 28

func (l loc) encode() []byte {
	b := make([]byte, locSize)
	binary.BigEndian.PutUint64(b[0:], l.seq)
	binary.BigEndian.PutUint64(b[8:], uint64(l.off))
	binary.BigEndian.PutUint32(b[16:], uint32(l.length))
	binary.BigEndian.PutUint64(b[20:], uint64(l.stored))
	return b
}

func decodeLoc(b []byte) (loc, error) {
	if len(b) != locSize {
		return loc{}, fmt.Errorf("index entry of %d bytes, want %d", len(b), locSize)
	}
	return loc{
		seq:    binary.BigEndian.Uint64(b[0:]),
		off:    int64(binary.BigEndian.Uint64(b[8:])),
		length: int64(binary.BigEndian.Uint32(b[16:])),
		stored: int64(binary.BigEndian.Uint64(b[20:])),
	}, nil
}

// object is what the index knows of one object.
type object struct {
	seq  uint64
	size int64
	name string // under the store's prefix
}

func (o object) encode() []byte {
	b := make([]byte, 8, 8+len(o.name))
	binary.BigEndian.PutUint64(b, uint64(o.size))
	return append(b, o.name...)
}

func decodeObject(seq uint64, b []byte) (object, error) {
	if len(b) < 8 {
		return object{}, fmt.Errorf("object entry of %d bytes", len(b))
	}
	return object{seq: seq, size: int64(binary.BigEndian.Uint64(b)), name: string(b[8:])}, nil
}

func encodeUint64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}
