package vaultdb

import (
	"encoding/binary"
	"fmt"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// Index key layout (goleveldb under index/). One byte of prefix says what a
// key is; integers are big endian so keys sort by number.
//
//	"v"                          -> indexFormat (1 byte)
//	'l' author(32) seq(8)        -> seg(4) off(8) size(4) cid   entry location
//	'c' cid                      -> author(32) seq(8)           entry by CID
//	'h' author(32)               -> seq(8) clock(8) cid         author's head
//	'f' path                     -> folder Record (record.go)
//	'a' peer(32) author(32)      -> seq(8)                      acknowledged
//	'm' name                     -> bytes                       metadata
//
// 'l', 'c' and 'h' are derived from the logs and checked against them at
// every Open; 'f', 'a' and 'm' are the node's and vanish with a rebuild.
const (
	pfxLoc    = 'l'
	pfxCID    = 'c'
	pfxHead   = 'h'
	pfxFolder = 'f'
	pfxAck    = 'a'
	pfxMeta   = 'm'
)

// indexFormat is the version of this key layout and of the value encodings.
// An index of another version is rebuilt.
const indexFormat = 1

var formatKey = []byte("v")

func locKey(author keys.DeviceID, seq uint64) []byte {
	k := make([]byte, 0, 41)
	k = append(k, pfxLoc)
	k = append(k, author[:]...)
	return binary.BigEndian.AppendUint64(k, seq)
}

func locValue(l loc, c cid.Cid) []byte {
	v := make([]byte, 0, 16+c.ByteLen())
	v = binary.BigEndian.AppendUint32(v, l.seg)
	v = binary.BigEndian.AppendUint64(v, uint64(l.off))
	v = binary.BigEndian.AppendUint32(v, l.n)
	return append(v, c.Bytes()...)
}

func parseLocKey(k []byte) (entryKey, bool) {
	if len(k) != 41 || k[0] != pfxLoc {
		return entryKey{}, false
	}
	var ek entryKey
	copy(ek.author[:], k[1:33])
	ek.seq = binary.BigEndian.Uint64(k[33:])
	return ek, true
}

func parseLocValue(v []byte) (loc, cid.Cid, error) {
	if len(v) < 16 {
		return loc{}, cid.Undef, fmt.Errorf("location of %d bytes: %w", len(v), ErrCorrupt)
	}
	l := loc{
		seg: binary.BigEndian.Uint32(v[0:4]),
		off: int64(binary.BigEndian.Uint64(v[4:12])),
		n:   binary.BigEndian.Uint32(v[12:16]),
	}
	c, err := cid.Cast(v[16:])
	if err != nil {
		return loc{}, cid.Undef, fmt.Errorf("location CID: %v: %w", err, ErrCorrupt)
	}
	return l, c, nil
}

func cidKey(c cid.Cid) []byte { return append([]byte{pfxCID}, c.Bytes()...) }

func cidValue(author keys.DeviceID, seq uint64) []byte {
	v := make([]byte, 0, 40)
	v = append(v, author[:]...)
	return binary.BigEndian.AppendUint64(v, seq)
}

func parseCIDValue(v []byte) (entryKey, bool) {
	if len(v) != 40 {
		return entryKey{}, false
	}
	var ek entryKey
	copy(ek.author[:], v[:32])
	ek.seq = binary.BigEndian.Uint64(v[32:])
	return ek, true
}

func headKey(author keys.DeviceID) []byte { return append([]byte{pfxHead}, author[:]...) }

func headValue(h entry.Head) []byte {
	v := make([]byte, 0, 16+h.CID.ByteLen())
	v = binary.BigEndian.AppendUint64(v, h.Seq)
	v = binary.BigEndian.AppendUint64(v, h.Clock)
	return append(v, h.CID.Bytes()...)
}

func folderKey(path string) []byte { return append([]byte{pfxFolder}, path...) }

func ackKey(peer, author keys.DeviceID) []byte {
	k := make([]byte, 0, 65)
	k = append(k, pfxAck)
	k = append(k, peer[:]...)
	return append(k, author[:]...)
}

func metaKey(name string) []byte { return append([]byte{pfxMeta}, name...) }
