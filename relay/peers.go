package relay

import (
	"errors"
	"fmt"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/weftsync/weft/internal/p2p"
	"github.com/weftsync/weft/protocol/keys"
)

// PeerIDOf returns the libp2p peer ID of a device (or relay): its ed25519
// public key is its identity.
func PeerIDOf(d keys.DeviceID) (peer.ID, error) { return p2p.PeerIDOf(d) }

// DeviceIDOf returns the device ID of a libp2p peer, or an error if its key
// is not an ed25519 key (then it cannot be a weft device or relay).
func DeviceIDOf(p peer.ID) (keys.DeviceID, error) { return p2p.DeviceIDOf(p) }

// ErrBadAddr means a relay address is not a multiaddr ending in /p2p/ID of
// an ed25519 peer.
var ErrBadAddr = errors.New("relay address must be a multiaddr ending in /p2p/<peer ID>")

// ParseAddr parses a relay's multiaddr as recorded in a vault's membership
// ("/ip4/203.0.113.7/tcp/4001/p2p/12D3KooW..."): the relay's peer, its
// dialable address, and its ID as a device ID.
func ParseAddr(s string) (peer.AddrInfo, keys.DeviceID, error) {
	var d keys.DeviceID
	m, err := ma.NewMultiaddr(strings.TrimSpace(s))
	if err != nil {
		return peer.AddrInfo{}, d, fmt.Errorf("relay address %q: %w", s, err)
	}
	info, err := peer.AddrInfoFromP2pAddr(m)
	if err != nil {
		return peer.AddrInfo{}, d, fmt.Errorf("relay address %q: %w", s, ErrBadAddr)
	}
	d, err = DeviceIDOf(info.ID)
	if err != nil {
		return peer.AddrInfo{}, d, fmt.Errorf("relay address %q: %w", s, err)
	}
	return *info, d, nil
}

// Listed reports whether the relay with id appears among addrs, the relay
// multiaddrs of a vault's membership.
func Listed(addrs []string, id peer.ID) bool {
	for _, a := range addrs {
		if info, _, err := ParseAddr(a); err == nil && info.ID == id {
			return true
		}
	}
	return false
}
