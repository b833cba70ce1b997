package pack

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/ipfs/go-cid"
)

// A pack is a sequence of records, each framed so that a torn or damaged one
// is recognised without trusting anything after it:
//
//	offset  size  field
//	0       4     magic "wpk1" (0x77 0x70 0x6b 0x31)
//	4       4     CRC-32C (Castagnoli) of bytes [8, end of record), big endian
//	8       2     n: length of the CID in bytes, big endian
//	10      4     L: length of the chunk in bytes, big endian
//	14      n     the CID in binary form (cid.Cid.Bytes)
//	14+n    L     the chunk
//
// A record is 14+n+L bytes; there is no padding between records. The CRC
// guards the lengths too: a flipped length bit fails the check instead of
// sending a reader somewhere else.
const (
	recordHeaderSize = 14
	maxCIDLen        = 128
)

var (
	recordMagic = [4]byte{'w', 'p', 'k', '1'}
	castagnoli  = crc32.MakeTable(crc32.Castagnoli)
)

// errBadRecord is what parsing a record that is torn, damaged or not a
// record at all returns. It stays inside the package: callers see
// ErrCorrupt, or nothing at all when recovery truncates a torn tail.
var errBadRecord = errors.New("bad record")

// recordSize is the on-disk size of a record holding a CID of cidLen bytes
// and a chunk of dataLen bytes.
func recordSize(cidLen, dataLen int) int64 {
	return int64(recordHeaderSize + cidLen + dataLen)
}

// appendRecordHeader appends the header and CID of a record for data to b.
// The chunk itself follows it on disk; it is not copied here so that a
// 4 MiB chunk is written straight from the caller's slice.
func appendRecordHeader(b []byte, c []byte, data []byte) []byte {
	var h [recordHeaderSize]byte
	copy(h[0:4], recordMagic[:])
	binary.BigEndian.PutUint16(h[8:10], uint16(len(c)))
	binary.BigEndian.PutUint32(h[10:14], uint32(len(data)))
	crc := crc32.Update(0, castagnoli, h[8:14])
	crc = crc32.Update(crc, castagnoli, c)
	crc = crc32.Update(crc, castagnoli, data)
	binary.BigEndian.PutUint32(h[4:8], crc)
	b = append(b, h[:]...)
	return append(b, c...)
}

// header is a parsed record header.
type header struct {
	crc     uint32
	cidLen  int
	dataLen int
}

func (h header) size() int64 { return recordSize(h.cidLen, h.dataLen) }

// parseHeader checks the magic and bounds of a record header. It does not
// check the CRC, which needs the whole record.
func parseHeader(h []byte) (header, error) {
	if len(h) < recordHeaderSize || !bytes.Equal(h[0:4], recordMagic[:]) {
		return header{}, errBadRecord
	}
	hd := header{
		crc:     binary.BigEndian.Uint32(h[4:8]),
		cidLen:  int(binary.BigEndian.Uint16(h[8:10])),
		dataLen: int(binary.BigEndian.Uint32(h[10:14])),
	}
	if hd.cidLen == 0 || hd.cidLen > maxCIDLen || hd.dataLen > MaxChunkSize {
		return header{}, errBadRecord
	}
	return hd, nil
}

// parseRecord checks a whole record held in rec and returns its CID bytes
// and chunk, both aliasing rec.
func parseRecord(rec []byte) (cidBytes, data []byte, err error) {
	hd, err := parseHeader(rec)
	if err != nil {
		return nil, nil, err
	}
	if int64(len(rec)) != hd.size() {
		return nil, nil, errBadRecord
	}
	if crc32.Checksum(rec[8:], castagnoli) != hd.crc {
		return nil, nil, errBadRecord
	}
	cidBytes = rec[recordHeaderSize : recordHeaderSize+hd.cidLen]
	return cidBytes, rec[recordHeaderSize+hd.cidLen:], nil
}

// readRecord reads and checks the record at off in f, which is at most
// limit bytes long.
func readRecord(f io.ReaderAt, off, limit int64) (cidBytes, data []byte, err error) {
	var h [recordHeaderSize]byte
	if off+recordHeaderSize > limit {
		return nil, nil, errBadRecord
	}
	if _, err := f.ReadAt(h[:], off); err != nil {
		return nil, nil, fmt.Errorf("reading record header at %d: %w", off, err)
	}
	hd, err := parseHeader(h[:])
	if err != nil {
		return nil, nil, err
	}
	if off+hd.size() > limit {
		return nil, nil, errBadRecord
	}
	rec := make([]byte, hd.size())
	if _, err := f.ReadAt(rec, off); err != nil {
		return nil, nil, fmt.Errorf("reading record at %d: %w", off, err)
	}
	return parseRecord(rec)
}

// verifyChunk reports whether data hashes to c.
func verifyChunk(c cid.Cid, data []byte) bool {
	got, err := c.Prefix().Sum(data)
	return err == nil && got.Equals(c)
}
