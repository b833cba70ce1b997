package graphsnap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math"
	"slices"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// magic opens every snapshot; the byte after it is the format version.
// Format 2 adds a version's author name (flag 2); format 1, written before
// entries could name their author, still reads (its versions have none).
const (
	magic    = "weft-graphsnap"
	format   = 2
	format1  = 1
	flagText = 1
	flagName = 2
)

// ErrCorrupt wraps every reason a snapshot does not decode.
var ErrCorrupt = errors.New("graph snapshot corrupt")

// Reach is how far into one author's log a snapshot reaches: every entry
// up to Seq is folded in, and the entry at Seq has this CID (so a log that
// was replaced or lost its tail since is noticed).
type Reach struct {
	Seq uint64
	CID cid.Cid
}

// Version is one version held: the body as the device keeps it in memory
// (no inline bytes) and what the version graph adds to it.
type Version struct {
	ID    protocol.VersionID
	Clock uint64 // Lamport clock of the entry that carried it
	Time  int64  // hybrid logical clock of that entry, unix milliseconds
	Text  bool   // the graph's merge-candidate flag (computed from inline bytes no longer held)
	// Author is the author's device name its entry carried
	// (protocol.Version.AuthorName), "" for none.
	Author string
	Body   entry.Version
}

// Snapshot is what a device derived from a vault's logs.
type Snapshot struct {
	Vault    keys.VaultID
	Reach    map[keys.DeviceID]Reach
	Clock    uint64 // highest Lamport clock folded in
	HLC      int64  // the vault's hybrid logical clock state
	Versions []Version
}

// Encode returns s in the snapshot format.
func Encode(s *Snapshot) []byte {
	e := encoder{authors: map[keys.DeviceID]uint64{}}
	// The author table: every device named by a version ID or a
	// supersedes edge, so that each reference costs a varint, not 32 bytes.
	for _, d := range slices.SortedFunc(maps.Keys(s.Reach), func(x, y keys.DeviceID) int { return bytes.Compare(x[:], y[:]) }) {
		e.author(d) // in order, so that one snapshot always encodes alike
	}
	for i := range s.Versions {
		e.author(s.Versions[i].ID.Author)
		for _, p := range s.Versions[i].Body.Supersedes {
			e.author(p.Author)
		}
	}
	b := make([]byte, 0, 64+len(e.table)*32+len(s.Versions)*96)
	b = append(b, magic...)
	b = append(b, format)
	b = append(b, s.Vault[:]...)
	b = binary.AppendUvarint(b, uint64(len(e.table)))
	for _, d := range e.table {
		b = append(b, d[:]...)
	}
	b = binary.AppendUvarint(b, uint64(len(s.Reach)))
	for _, d := range e.table {
		r, ok := s.Reach[d]
		if !ok {
			continue
		}
		b = binary.AppendUvarint(b, e.authors[d])
		b = binary.AppendUvarint(b, r.Seq)
		b = appendBytes(b, r.CID.Bytes())
	}
	b = binary.AppendUvarint(b, s.Clock)
	b = binary.AppendVarint(b, s.HLC)
	b = binary.AppendUvarint(b, uint64(len(s.Versions)))
	for i := range s.Versions {
		b = e.version(b, &s.Versions[i])
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type encoder struct {
	authors map[keys.DeviceID]uint64
	table   []keys.DeviceID
}

func (e *encoder) author(d keys.DeviceID) {
	if _, ok := e.authors[d]; !ok {
		e.authors[d] = uint64(len(e.table))
		e.table = append(e.table, d)
	}
}

func (e *encoder) id(b []byte, id protocol.VersionID) []byte {
	b = binary.AppendUvarint(b, e.authors[id.Author])
	b = binary.AppendUvarint(b, id.Seq)
	return binary.AppendUvarint(b, uint64(id.Index))
}

func (e *encoder) version(b []byte, v *Version) []byte {
	b = e.id(b, v.ID)
	b = binary.AppendUvarint(b, v.Clock)
	b = binary.AppendVarint(b, v.Time)
	var flags byte
	if v.Text {
		flags |= flagText
	}
	if v.Author != "" {
		flags |= flagName
	}
	b = append(b, flags)
	if v.Author != "" {
		b = appendBytes(b, []byte(v.Author))
	}
	body := &v.Body
	b = appendBytes(b, []byte(body.Path))
	b = append(b, byte(body.Kind))
	b = binary.AppendUvarint(b, uint64(body.Mode))
	b = binary.AppendVarint(b, body.MTime)
	b = binary.AppendUvarint(b, body.Size)
	b = binary.AppendUvarint(b, uint64(len(body.Supersedes)))
	for _, p := range body.Supersedes {
		b = e.id(b, p)
	}
	b = append(b, body.Hash[:]...)
	b = binary.AppendUvarint(b, uint64(len(body.Chunks)))
	for _, c := range body.Chunks {
		b = appendBytes(b, c.CID.Bytes())
		b = binary.AppendUvarint(b, uint64(c.Size))
	}
	return appendBytes(b, []byte(body.Target))
}

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// Decode parses a snapshot written by Encode. Every failure wraps
// ErrCorrupt; nothing is allocated beyond what the bytes can hold.
func Decode(data []byte) (*Snapshot, error) {
	l, err := DecodeLazy(data)
	if err != nil {
		return nil, err
	}
	return l.whole()
}

// whole decodes every version of l into a Snapshot of its own (not l's,
// which holds the encoded bytes).
func (l *Lazy) whole() (*Snapshot, error) {
	s := &Snapshot{Vault: l.Vault, Reach: l.Reach, Clock: l.Clock, HLC: l.HLC}
	s.Versions = make([]Version, 0, l.n)
	err := l.Each(func(v *Version) error {
		s.Versions = append(s.Versions, *v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Lazy is a snapshot whose versions are decoded one at a time (Each), so
// that a large one is never held decoded whole: 100,000 versions decoded
// at once were 25 MB that lived only until the graph held them.
type Lazy struct {
	// Snapshot is the header: everything but Versions, which stays nil.
	Snapshot
	d decoder
	n int // versions still to decode
}

// DecodeLazy checks data's checksum, format and header and returns the
// snapshot with its versions not yet decoded. data must not change until
// Each has returned.
func DecodeLazy(data []byte) (*Lazy, error) {
	if len(data) < len(magic)+1+32+4 {
		return nil, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(data))
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	if string(body[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: not a graph snapshot", ErrCorrupt)
	}
	f := body[len(magic)]
	if f != format && f != format1 {
		return nil, fmt.Errorf("%w: format %d, want %d", ErrCorrupt, f, format)
	}
	l := &Lazy{d: decoder{b: body[len(magic)+1:], format: f, names: map[string]string{}}}
	d, s := &l.d, &l.Snapshot
	copy(s.Vault[:], d.take(32))
	n := d.count(32)
	d.table = make([]keys.DeviceID, n)
	for i := range d.table {
		copy(d.table[i][:], d.take(32))
	}
	n = d.count(2)
	s.Reach = make(map[keys.DeviceID]Reach, n)
	for range n {
		a := d.author()
		r := Reach{Seq: d.uvarint(), CID: d.cid()}
		if _, dup := s.Reach[a]; dup && d.err == nil {
			d.fail("author %s listed twice", a.Short())
		}
		s.Reach[a] = r
	}
	s.Clock = d.uvarint()
	s.HLC = d.varint()
	l.n = d.count(40) // the smallest version takes more than 40 bytes
	if d.err != nil {
		return nil, d.err
	}
	return l, nil
}

// Len is how many versions Each has still to decode (as many as the
// header says; bounded by the snapshot's size, 40 bytes a version at
// least).
func (l *Lazy) Len() int { return l.n }

// Each decodes the versions in order and calls fn with each (v is reused:
// fn copies what it keeps). It returns fn's first error, or one wrapping
// ErrCorrupt for bytes that do not decode, which may come after fn has
// seen some versions: a caller that must not act on part of a snapshot
// undoes what it did. Each can be called once.
func (l *Lazy) Each(fn func(v *Version) error) error {
	d := &l.d
	for ; l.n > 0; l.n-- {
		v := d.version()
		if d.err != nil {
			return d.err
		}
		if err := fn(&v); err != nil {
			return err
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after the last version", len(d.b))
	}
	return d.err
}

type decoder struct {
	b      []byte
	table  []keys.DeviceID
	err    error
	format byte
	names  map[string]string // author names, each held once however many versions carry it
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
	d.b = nil
}

func (d *decoder) take(n int) []byte {
	if d.err != nil || n > len(d.b) {
		d.fail("truncated")
		return make([]byte, n)
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return x
}

// count reads a length whose items take at least min bytes each, and
// refuses one the remaining bytes cannot hold.
func (d *decoder) count(min int) int {
	n := d.uvarint()
	if n > uint64(len(d.b)/min) {
		d.fail("count %d for %d bytes", n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("length %d for %d bytes", n, len(d.b))
		return nil
	}
	return d.take(int(n))
}

func (d *decoder) cid() cid.Cid {
	p := d.bytes()
	if d.err != nil {
		return cid.Undef
	}
	c, err := cid.Cast(p)
	if err != nil {
		d.fail("CID: %v", err)
		return cid.Undef
	}
	return c
}

func (d *decoder) author() keys.DeviceID {
	i := d.uvarint()
	if d.err != nil {
		return keys.DeviceID{}
	}
	if i >= uint64(len(d.table)) {
		d.fail("author %d of %d", i, len(d.table))
		return keys.DeviceID{}
	}
	return d.table[i]
}

func (d *decoder) id() protocol.VersionID {
	id := protocol.VersionID{Author: d.author(), Seq: d.uvarint()}
	x := d.uvarint()
	if x > math.MaxUint32 {
		d.fail("version index %d", x)
	}
	id.Index = uint32(x)
	return id
}

func (d *decoder) version() Version {
	v := Version{ID: d.id(), Clock: d.uvarint(), Time: d.varint()}
	flags := d.take(1)[0]
	known := byte(flagText | flagName)
	if d.format == format1 {
		known = flagText
	}
	if flags&^known != 0 {
		d.fail("flags %#x", flags)
	}
	v.Text = flags&flagText != 0
	if flags&flagName != 0 {
		name := d.bytes()
		if d.err == nil && len(name) == 0 {
			d.fail("an empty author name")
		}
		if interned, ok := d.names[string(name)]; ok {
			v.Author = interned
		} else {
			v.Author = string(name)
			d.names[v.Author] = v.Author
		}
	}
	b := &v.Body
	b.Path = string(d.bytes())
	b.Kind = entry.Kind(d.take(1)[0])
	mode := d.uvarint()
	if mode > math.MaxUint32 {
		d.fail("mode %d", mode)
	}
	b.Mode = uint32(mode)
	b.MTime = d.varint()
	b.Size = d.uvarint()
	if n := d.count(3); n > 0 {
		b.Supersedes = make([]protocol.VersionID, n)
		for i := range b.Supersedes {
			b.Supersedes[i] = d.id()
		}
	}
	copy(b.Hash[:], d.take(32))
	if n := d.count(6); n > 0 {
		b.Chunks = make([]entry.ChunkRef, n)
		for i := range b.Chunks {
			b.Chunks[i].CID = d.cid()
			size := d.uvarint()
			if size > math.MaxUint32 {
				d.fail("chunk size %d", size)
			}
			b.Chunks[i].Size = uint32(size)
		}
	}
	b.Target = string(d.bytes())
	return v
}
