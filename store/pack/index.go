package pack

import (
	"encoding/binary"
	"fmt"

	"github.com/weftsync/weft/store/chunkrec"
)

// The goleveldb index holds these keys (docs/storage.md has the same table):
//
//	"c" + CID bytes        -> loc (24 bytes, below): where the chunk's record is
//	"t" + pack ID (4, BE)  -> uint64 BE: the pack's indexed length; every record
//	                          before it is indexed (or was collected)
//	"r" + pack ID (4, BE)  -> empty: the pack was rewritten by GC and is to be
//	                          deleted
//	"mformat"              -> format version (one byte)
//	"mclean"               -> empty: written at Close, deleted at Open
//	"mscrub.cursor"        -> the "c" key the next scrub step starts after
//	"mscrub.last"          -> int64 BE unix nanoseconds: end of the last full
//	                          scrub pass
const (
	prefixChunk   = 'c'
	prefixTail    = 't'
	prefixRetired = 'r'
	indexFormat   = 1
)

var (
	keyFormat      = []byte("mformat")
	keyClean       = []byte("mclean")
	keyScrubCursor = []byte("mscrub.cursor")
	keyScrubLast   = []byte("mscrub.last")
)

func chunkKey(cidBytes []byte) []byte {
	k := make([]byte, 1+len(cidBytes))
	k[0] = prefixChunk
	copy(k[1:], cidBytes)
	return k
}

func packKey(prefix byte, id uint32) []byte {
	k := make([]byte, 5)
	k[0] = prefix
	binary.BigEndian.PutUint32(k[1:], id)
	return k
}

// loc is an index value: where a chunk's record is, and when the chunk was
// first stored (or last re-put), which GC's grace period reads.
//
//	offset size field
//	0      4    pack ID, big endian
//	4      8    offset of the record in the pack, big endian
//	12     4    length of the whole record, big endian
//	16     8    unix seconds the chunk was stored, big endian
type loc struct {
	pack   uint32
	off    int64
	length int64
	stored int64
}

const locSize = 24

func (l loc) encode() []byte {
	b := make([]byte, locSize)
	binary.BigEndian.PutUint32(b[0:4], l.pack)
	binary.BigEndian.PutUint64(b[4:12], uint64(l.off))
	binary.BigEndian.PutUint32(b[12:16], uint32(l.length))
	binary.BigEndian.PutUint64(b[16:24], uint64(l.stored))
	return b
}

func decodeLoc(b []byte) (loc, error) {
	if len(b) != locSize {
		return loc{}, fmt.Errorf("index value of %d bytes, want %d", len(b), locSize)
	}
	return loc{
		pack:   binary.BigEndian.Uint32(b[0:4]),
		off:    int64(binary.BigEndian.Uint64(b[4:12])),
		length: int64(binary.BigEndian.Uint32(b[12:16])),
		stored: int64(binary.BigEndian.Uint64(b[16:24])),
	}, nil
}

// sameRecord reports whether l and o name the same bytes on disk.
func (l loc) sameRecord(o loc) bool {
	return l.pack == o.pack && l.off == o.off && l.length == o.length
}

// dataLen is the chunk length for a record of l.length bytes holding a CID
// of cidLen bytes.
func (l loc) dataLen(cidLen int) int64 { return l.length - chunkrec.HeaderSize - int64(cidLen) }

func encodeUint64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}
