package vaultdb

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/entry"
)

// Record is the folder index's entry for one path: which version the node
// applied there, and what the file looked like on disk right after (so an
// unchanged file is recognised by its metadata without being read).
type Record struct {
	// Version is the version applied at this path.
	Version entry.VersionID
	Kind    entry.Kind
	Mode    uint32 // permission bits (beside Kind: a record is 160 bytes, not 168, in every index entry)
	Size    uint64
	MTime   int64  // unix nanoseconds, as the local file system reports
	Inode   uint64 // 0 where the file system has none
	Ctime   int64  // unix nanoseconds of the inode change time; 0 if none
	Hash    [32]byte
	Chunks  []entry.ChunkRef
	Target  string // symlink target
}

// recordFormat is the first byte of every encoded Record.
const recordFormat = 1

// Limits checked when decoding a Record, so a damaged value cannot make the
// decoder allocate without bound. A record holds its file's whole chunk
// list, so its bound is a version's (entry.MaxFileChunks), not an entry's:
// at entry.MaxRefs a file of 12 GiB (196,682 chunks) could not be recorded
// once pieces let it sync (full-scale B4, 2026-12-02).
const (
	maxRecordChunks = entry.MaxFileChunks
	maxRecordCIDLen = 64
)

var errRecord = errors.New("malformed folder record")

// AppendBinary appends the record's encoding to b:
//
//	format(1)=1  author(32)  seq(uvarint)  index(uvarint)  kind(1)
//	size(uvarint)  mtime(varint)  inode(uvarint)  ctime(varint)  mode(uvarint)
//	hash(32)  nchunks(uvarint)  { cidlen(uvarint) cid  size(uvarint) }*
//	targetlen(uvarint)  target
func (r Record) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, recordFormat)
	b = append(b, r.Version.Author[:]...)
	b = binary.AppendUvarint(b, r.Version.Seq)
	b = binary.AppendUvarint(b, uint64(r.Version.Index))
	b = append(b, byte(r.Kind))
	b = binary.AppendUvarint(b, r.Size)
	b = binary.AppendVarint(b, r.MTime)
	b = binary.AppendUvarint(b, r.Inode)
	b = binary.AppendVarint(b, r.Ctime)
	b = binary.AppendUvarint(b, uint64(r.Mode))
	b = append(b, r.Hash[:]...)
	if len(r.Chunks) > maxRecordChunks {
		return nil, fmt.Errorf("%w: %d chunks", errRecord, len(r.Chunks))
	}
	b = binary.AppendUvarint(b, uint64(len(r.Chunks)))
	for _, c := range r.Chunks {
		cb := c.CID.Bytes()
		if len(cb) == 0 || len(cb) > maxRecordCIDLen {
			return nil, fmt.Errorf("%w: chunk CID of %d bytes", errRecord, len(cb))
		}
		b = binary.AppendUvarint(b, uint64(len(cb)))
		b = append(b, cb...)
		b = binary.AppendUvarint(b, uint64(c.Size))
	}
	b = binary.AppendUvarint(b, uint64(len(r.Target)))
	return append(b, r.Target...), nil
}

// parseRecord decodes what AppendBinary wrote. It rejects an unknown
// format, truncated or trailing bytes, and out-of-range fields.
func parseRecord(p []byte) (Record, error) {
	var r Record
	d := decoder{b: p}
	if d.byte1() != recordFormat {
		return r, fmt.Errorf("%w: format", errRecord)
	}
	copy(r.Version.Author[:], d.take(32))
	r.Version.Seq = d.uvarint()
	r.Version.Index = uint32(d.uvarintMax(1<<32 - 1))
	r.Kind = entry.Kind(d.byte1())
	r.Size = d.uvarint()
	r.MTime = d.varint()
	r.Inode = d.uvarint()
	r.Ctime = d.varint()
	r.Mode = uint32(d.uvarintMax(1<<32 - 1))
	copy(r.Hash[:], d.take(32))
	n := d.uvarintMax(maxRecordChunks)
	if d.err == nil && n > 0 {
		r.Chunks = make([]entry.ChunkRef, 0, min(n, uint64(len(d.b))))
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		cb := d.take(int(d.uvarintMax(maxRecordCIDLen)))
		size := uint32(d.uvarintMax(1<<32 - 1))
		if d.err != nil {
			break
		}
		c, err := cid.Cast(cb)
		if err != nil {
			return Record{}, fmt.Errorf("%w: chunk CID: %v", errRecord, err)
		}
		r.Chunks = append(r.Chunks, entry.ChunkRef{CID: c, Size: size})
	}
	r.Target = string(d.take(int(d.uvarintMax(entry.MaxTargetLen))))
	if d.err != nil {
		return Record{}, d.err
	}
	if len(d.b) != 0 {
		return Record{}, fmt.Errorf("%w: %d trailing bytes", errRecord, len(d.b))
	}
	return r, nil
}

// decoder reads fields off a byte slice; the first failure sticks in err
// and every later read returns zero.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errRecord, what)
	}
	d.b = nil
}

func (d *decoder) take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.fail("truncated")
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte1() byte {
	if v := d.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[k:]
	return v
}

func (d *decoder) uvarintMax(max uint64) uint64 {
	v := d.uvarint()
	if v > max {
		d.fail("value out of range")
		return 0
	}
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Varint(d.b)
	if k <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[k:]
	return v
}
