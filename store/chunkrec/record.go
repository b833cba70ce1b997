package chunkrec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/weftsync/weft/store/chunkstore"
)

// A pack file or an object is a sequence of records, each framed so that a torn or damaged one
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
	HeaderSize = 14
	MaxCIDLen  = 128
)

// Magic starts every record.
var Magic = [4]byte{'w', 'p', 'k', '1'}

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// ErrBadRecord is what parsing a record that is torn, damaged or not a
// record at all returns. It stays inside the stores: their callers see
// chunkstore.ErrCorrupt, or nothing at all when recovery drops a torn tail.
var ErrBadRecord = errors.New("bad record")

// Size is the stored size of a record holding a CID of cidLen bytes
// and a chunk of dataLen bytes.
func Size(cidLen, dataLen int) int64 {
	return int64(HeaderSize + cidLen + dataLen)
}

// AppendHeader appends the header and CID of a record for data to b.
// The chunk itself follows it on disk; it is not copied here so that a
// 4 MiB chunk is written straight from the caller's slice.
func AppendHeader(b []byte, c []byte, data []byte) []byte {
	var h [HeaderSize]byte
	copy(h[0:4], Magic[:])
	binary.BigEndian.PutUint16(h[8:10], uint16(len(c)))
	binary.BigEndian.PutUint32(h[10:14], uint32(len(data)))
	crc := crc32.Update(0, castagnoli, h[8:14])
	crc = crc32.Update(crc, castagnoli, c)
	crc = crc32.Update(crc, castagnoli, data)
	binary.BigEndian.PutUint32(h[4:8], crc)
	b = append(b, h[:]...)
	return append(b, c...)
}

// Header is a parsed record header.
type Header struct {
	CRC     uint32
	CIDLen  int
	DataLen int
}

// Size is the size of the whole record.
func (h Header) Size() int64 { return Size(h.CIDLen, h.DataLen) }

// ParseHeader checks the magic and bounds of a record header. It does not
// check the CRC, which needs the whole record.
func ParseHeader(h []byte) (Header, error) {
	if len(h) < HeaderSize || !bytes.Equal(h[0:4], Magic[:]) {
		return Header{}, ErrBadRecord
	}
	hd := Header{
		CRC:     binary.BigEndian.Uint32(h[4:8]),
		CIDLen:  int(binary.BigEndian.Uint16(h[8:10])),
		DataLen: int(binary.BigEndian.Uint32(h[10:14])),
	}
	if hd.CIDLen == 0 || hd.CIDLen > MaxCIDLen || hd.DataLen > chunkstore.MaxChunkSize {
		return Header{}, ErrBadRecord
	}
	return hd, nil
}

// Parse checks a whole record held in rec and returns its CID bytes
// and chunk, both aliasing rec.
func Parse(rec []byte) (cidBytes, data []byte, err error) {
	hd, err := ParseHeader(rec)
	if err != nil {
		return nil, nil, err
	}
	if int64(len(rec)) != hd.Size() {
		return nil, nil, ErrBadRecord
	}
	if crc32.Checksum(rec[8:], castagnoli) != hd.CRC {
		return nil, nil, ErrBadRecord
	}
	cidBytes = rec[HeaderSize : HeaderSize+hd.CIDLen]
	return cidBytes, rec[HeaderSize+hd.CIDLen:], nil
}

// Read reads and checks the record at off in f, which is at most
// limit bytes long.
func Read(f io.ReaderAt, off, limit int64) (cidBytes, data []byte, err error) {
	var h [HeaderSize]byte
	if off+HeaderSize > limit {
		return nil, nil, ErrBadRecord
	}
	if _, err := f.ReadAt(h[:], off); err != nil {
		return nil, nil, fmt.Errorf("reading record header at %d: %w", off, err)
	}
	hd, err := ParseHeader(h[:])
	if err != nil {
		return nil, nil, err
	}
	if off+hd.Size() > limit {
		return nil, nil, ErrBadRecord
	}
	rec := make([]byte, hd.Size())
	if _, err := f.ReadAt(rec, off); err != nil {
		return nil, nil, fmt.Errorf("reading record at %d: %w", off, err)
	}
	return Parse(rec)
}

// Scan calls fn for each well-framed record in f between from and size
// and returns where the trailing bytes that hold no record begin (size if
// there are none). A damaged region followed by good records is skipped by
// searching for the next record's magic, so damage in the middle of a pack
// costs only the records it touches.
func Scan(f io.ReaderAt, from, size int64, fn func(off int64, cidBytes, data []byte) error) (int64, error) {
	off := from
	end := from
	for off < size {
		cidBytes, data, err := Read(f, off, size)
		if err == nil {
			if err := fn(off, cidBytes, data); err != nil {
				return 0, err
			}
			off += Size(len(cidBytes), len(data))
			end = off
			continue
		}
		if !errors.Is(err, ErrBadRecord) {
			return 0, err
		}
		next, err := findMagic(f, off+1, size)
		if err != nil {
			return 0, err
		}
		off = next
	}
	return end, nil
}

// findMagic returns the offset of the next record magic at or after from,
// or size if there is none.
func findMagic(f io.ReaderAt, from, size int64) (int64, error) {
	const window = 1 << 20
	buf := make([]byte, max(min(int64(window+len(Magic)-1), size-from), 0))
	for from < size {
		n := int64(len(buf))
		if from+n > size {
			n = size - from
		}
		if _, err := f.ReadAt(buf[:n], from); err != nil && err != io.EOF {
			return 0, err
		}
		if i := bytes.Index(buf[:n], Magic[:]); i >= 0 {
			return from + int64(i), nil
		}
		if n < int64(len(buf)) {
			break
		}
		from += window
	}
	return size, nil
}
