package p2p

import (
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// maxBans bounds the identities Bans remembers: past it, expired bans are
// forgotten, and if none has expired a new one is not recorded (the peer
// is still disconnected by the caller).
const maxBans = 4096

// Bans is a connection gater (Base.Gater) that refuses, for a while, the
// identities a caller bans: a stranger that sent what no weft peer sends
// (a first frame larger than its message can be). Refusal comes after the
// security handshake, the first point at which the peer's identity is
// known. It is safe for concurrent use.
type Bans struct {
	now func() time.Time

	mu    sync.Mutex // guards until
	until map[peer.ID]time.Time
}

// NewBans returns an empty ban list on the system clock.
func NewBans() *Bans {
	return &Bans{now: time.Now, until: map[peer.ID]time.Time{}}
}

// Ban refuses p's connections for d, and reports whether p was not
// already banned.
func (b *Bans) Ban(p peer.ID, d time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if t, ok := b.until[p]; ok && now.Before(t) {
		return false
	}
	if len(b.until) >= maxBans {
		for q, t := range b.until {
			if !now.Before(t) {
				delete(b.until, q)
			}
		}
		if len(b.until) >= maxBans {
			return true
		}
	}
	b.until[p] = now.Add(d)
	return true
}

// Banned reports whether p is banned now.
func (b *Bans) Banned(p peer.ID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.until[p]
	if ok && !b.now().Before(t) {
		delete(b.until, p)
		return false
	}
	return ok
}

// InterceptPeerDial refuses to dial a banned peer.
func (b *Bans) InterceptPeerDial(p peer.ID) bool { return !b.Banned(p) }

// InterceptAddrDial allows every address.
func (b *Bans) InterceptAddrDial(peer.ID, ma.Multiaddr) bool { return true }

// InterceptAccept allows every connection until its peer is known.
func (b *Bans) InterceptAccept(network.ConnMultiaddrs) bool { return true }

// InterceptSecured refuses a banned peer's connection.
func (b *Bans) InterceptSecured(_ network.Direction, p peer.ID, _ network.ConnMultiaddrs) bool {
	return !b.Banned(p)
}

// InterceptUpgraded allows every connection that got this far.
func (b *Bans) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }
