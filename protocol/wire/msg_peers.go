package wire

import (
	"bytes"

	"github.com/weftsync/weft/protocol/keys"
)

// Limits of a Peers message.
const (
	MaxPeers     = 256
	MaxPeerAddrs = 16
	MaxAddrLen   = 256
)

// PeerAddrs is where one member listens.
type PeerAddrs struct {
	Device keys.DeviceID
	Addrs  []string // multiaddrs, text form
}

// Peers tells the opener of a log stream where the vault's other members
// listen, as far as the answerer knows, so members that were paired
// through one device find each other directly (peer exchange).
//
// Payload layout:
//
//	count (uvarint) | count x ( device (32) | naddrs (uvarint) |
//	                            naddrs x ( length (uvarint) | multiaddr text ) )
//
// Devices are strictly increasing by bytes.
type Peers struct {
	Peers []PeerAddrs
}

// AppendBinary appends the payload of p to b. The caller sorts Peers by
// device and respects the limits; extra entries are cut.
func (p Peers) AppendBinary(b []byte) []byte {
	ps := p.Peers
	if len(ps) > MaxPeers {
		ps = ps[:MaxPeers]
	}
	b = appendUvarint(b, uint64(len(ps)))
	for _, e := range ps {
		b = append(b, e.Device[:]...)
		addrs := e.Addrs
		if len(addrs) > MaxPeerAddrs {
			addrs = addrs[:MaxPeerAddrs]
		}
		b = appendUvarint(b, uint64(len(addrs)))
		for _, a := range addrs {
			b = appendBytes(b, []byte(a))
		}
	}
	return b
}

// ParsePeers parses a Peers payload.
func ParsePeers(payload []byte) (Peers, error) {
	ps := parser{b: payload}
	n := ps.count("peer count", 33, MaxPeers)
	out := Peers{Peers: make([]PeerAddrs, 0, n)}
	for i := 0; i < n && ps.err == nil; i++ {
		var e PeerAddrs
		copy(e.Device[:], ps.fixed(32, "peer device"))
		if i > 0 && bytes.Compare(out.Peers[i-1].Device[:], e.Device[:]) >= 0 {
			ps.fail("peer devices not strictly increasing")
		}
		na := ps.count("address count", 1, MaxPeerAddrs)
		for j := 0; j < na && ps.err == nil; j++ {
			e.Addrs = append(e.Addrs, string(ps.bytesField("address", MaxAddrLen)))
		}
		out.Peers = append(out.Peers, e)
	}
	if err := ps.end(); err != nil {
		return Peers{}, err
	}
	return out, nil
}
