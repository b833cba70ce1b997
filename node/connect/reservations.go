package connect

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/weftsync/weft/internal/p2p"
	"github.com/weftsync/weft/protocol/keys"
)

// Timing of relay reservations and of dialling members through relays.
const (
	// ReservationCheck is how often the loop looks at its relays: whether
	// the set changed, a connection dropped, a renewal or retry is due.
	ReservationCheck = 5 * time.Second
	// reserveTimeout bounds one reservation request or relayed dial.
	reserveTimeout = 30 * time.Second
	// retryMin and retryMax bound the backoff after a failed reservation
	// or relayed dial; it doubles from retryMin on each failure.
	retryMin = time.Second
	retryMax = 5 * time.Minute
	// punchRetryMin and punchRetryMax bound how long a member may stay
	// reachable only through a relay before the relayed connection is
	// closed and dialled again, which makes libp2p try DCUtR again (it
	// tries once per new relayed connection, and not at all if its own
	// public address was not known yet). The wait doubles per retry.
	punchRetryMin = 30 * time.Second
	punchRetryMax = 30 * time.Minute
	// relayDialDefer is how long the device of a pair whose ID sorts
	// higher waits, with no connection to the other, before each dial of
	// it through a relay (the first, after a failed one, and after it
	// closed relayed connections that waited too long). When both dial at
	// once there are two relayed connections, both sides start DCUtR as
	// the one that received a connection, and the two punches collide and
	// fail (seen in TestHolePunchedSync: every attempt failed and the
	// devices met 60 s later). Two reservation checks are enough for the
	// lower one's dial to show; the higher one still dials after it, so a
	// member that cannot dial is reached all the same.
	relayDialDefer = 2 * ReservationCheck
)

// ParseRelays turns relay multiaddrs (each ending in /p2p/<relay ID>) into
// address infos, merging addresses of the same relay.
func ParseRelays(addrs []string) ([]peer.AddrInfo, error) {
	var ms []ma.Multiaddr
	for _, a := range addrs {
		m, err := ma.NewMultiaddr(a)
		if err != nil {
			return nil, fmt.Errorf("relay address %q: %w", a, err)
		}
		ms = append(ms, m)
	}
	infos, err := peer.AddrInfosFromP2pAddrs(ms...)
	if err != nil {
		return nil, fmt.Errorf("relay addresses (each must end in /p2p/<relay ID>): %w", err)
	}
	return infos, nil
}

// relayState is what keepReservations knows about one relay.
type relayState struct {
	info    peer.AddrInfo
	held    bool          // a reservation is held (as far as we know)
	expires time.Time     // of the held reservation
	next    time.Time     // when to reserve (renew or retry) next
	backoff time.Duration // after the last failure; 0 after a success
}

// Reservations holds a circuit v2 reservation on every relay Relays
// returns and dials members that are not connected through the relays it
// holds one on (docs/connectivity.md, "Relays"). Fill the exported fields
// and call Run; IsRelay may be called from any goroutine meanwhile.
//
// A reservation is renewed halfway to its expiry, and again at once when
// the connection to the relay drops (the relay forgets the reservation
// with the connection). A failed reservation is retried with a backoff
// doubling from retryMin to retryMax.
type Reservations struct {
	Host host.Host
	Self keys.DeviceID // this device, Host's identity
	Log  *slog.Logger
	Now  func() time.Time
	// Relays is the relay set, asked again on every check, so the set may
	// change while Run runs.
	Relays func() []peer.AddrInfo
	// Members lists the members of every vault this device serves (a
	// device may appear more than once), asked again on every check.
	Members func() []keys.DeviceID

	mu    sync.Mutex // guards state, which Run alone changes
	state map[peer.ID]*relayState
}

// IsRelay reports whether p is one of the relays Run holds (or tries to
// hold) a reservation on.
func (r *Reservations) IsRelay(p peer.ID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state[p] != nil
}

// Run keeps the reservations and dials members through them until ctx
// ends, checking every ReservationCheck.
func (r *Reservations) Run(ctx context.Context) {
	r.mu.Lock()
	r.state = map[peer.ID]*relayState{}
	r.mu.Unlock()
	dialer := newRelayDialer()
	tick := time.NewTicker(ReservationCheck)
	defer tick.Stop()
	for {
		current := r.Relays()
		seen := map[peer.ID]bool{}
		var held []peer.AddrInfo
		for _, info := range current {
			if info.ID == r.Host.ID() {
				continue
			}
			seen[info.ID] = true
			r.mu.Lock()
			st := r.state[info.ID]
			if st == nil {
				st = &relayState{}
				r.state[info.ID] = st
			}
			r.mu.Unlock()
			st.info = info
			r.reserve(ctx, st)
			if st.held {
				held = append(held, info)
			}
		}
		r.mu.Lock()
		for id := range r.state {
			if !seen[id] {
				delete(r.state, id)
				r.Host.ConnManager().Unprotect(id, ProtectRelay)
			}
		}
		r.mu.Unlock()
		r.dialViaRelays(ctx, held, dialer)

		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// reserve makes or renews the reservation on st's relay if one is due.
func (r *Reservations) reserve(ctx context.Context, st *relayState) {
	now := r.Now()
	if st.held && r.Host.Network().Connectedness(st.info.ID) != network.Connected {
		st.held, st.next = false, now // the relay dropped it with the connection
	}
	if now.Before(st.next) {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, reserveTimeout)
	rsv, err := client.Reserve(rctx, r.Host, st.info)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		st.held = false
		st.backoff = min(max(2*st.backoff, retryMin), retryMax)
		st.next = r.Now().Add(st.backoff)
		r.Log.Debug("relay reservation failed", "relay", st.info.ID, "retry_in", st.backoff, "err", err)
		return
	}
	now = r.Now()
	if !st.held {
		r.Log.Info("relay reservation held", "relay", st.info.ID, "expires", rsv.Expiration)
	} else {
		r.Log.Debug("relay reservation renewed", "relay", st.info.ID, "expires", rsv.Expiration)
	}
	r.Host.ConnManager().Protect(st.info.ID, ProtectRelay)
	st.held, st.expires, st.backoff = true, rsv.Expiration, 0
	st.next = now.Add(max(rsv.Expiration.Sub(now)/2, retryMin))
}

// relayDialer spaces out relayed dials and hole-punch retries per member.
type relayDialer struct {
	next      map[keys.DeviceID]time.Time
	backoff   map[keys.DeviceID]time.Duration
	punchWait map[keys.DeviceID]time.Duration // 0: punchRetryMin
	// unreached is when the member was first seen with no connection at
	// all, for the deferred dial of the higher device of a pair.
	unreached map[keys.DeviceID]time.Time
}

func newRelayDialer() *relayDialer {
	return &relayDialer{
		next: map[keys.DeviceID]time.Time{}, backoff: map[keys.DeviceID]time.Duration{},
		punchWait: map[keys.DeviceID]time.Duration{}, unreached: map[keys.DeviceID]time.Time{},
	}
}

// relayDefer is how long self waits, with no connection to dev, before it
// dials dev through a relay: nothing for the device of the pair whose ID
// sorts lower, relayDialDefer for the other, so that normally only
// one of them dials and only one relayed connection (and one DCUtR) exists.
// Both devices compute the same order.
func relayDefer(self, dev keys.DeviceID) time.Duration {
	if bytes.Compare(self[:], dev[:]) < 0 {
		return 0
	}
	return relayDialDefer
}

// reached records that dev has a connection of some kind now.
func (d *relayDialer) reached(dev keys.DeviceID) { delete(d.unreached, dev) }

// waited reports whether dev, with no connection at all, has been so for
// wait (counted from the first call since it was last reached).
func (d *relayDialer) waited(dev keys.DeviceID, now time.Time, wait time.Duration) bool {
	if wait <= 0 {
		return true
	}
	since, ok := d.unreached[dev]
	if !ok {
		d.unreached[dev] = now
		return false
	}
	return now.Sub(since) >= wait
}

// stale reports whether the member reached only through relayed
// connections conns has waited long enough for a direct one; if so it
// closes them (so the member can be dialled again) and lengthens the next
// wait. Each side times the relayed connections it dialled itself: the
// other side's are the other side's to retry (it doubles its own wait), so
// the two never take turns closing. A connection the other side dialled
// and then left is closed only after punchRetryMax.
func (d *relayDialer) stale(dev keys.DeviceID, conns []network.Conn, now time.Time) bool {
	wait := max(d.punchWait[dev], punchRetryMin)
	dialled := false
	for _, c := range conns {
		if c.Stat().Direction == network.DirOutbound {
			dialled = true
			if now.Sub(c.Stat().Opened) < wait {
				return false
			}
		}
	}
	if !dialled {
		for _, c := range conns {
			if now.Sub(c.Stat().Opened) < punchRetryMax {
				return false
			}
		}
	}
	for _, c := range conns {
		_ = c.Close()
	}
	d.punchWait[dev] = min(2*wait, punchRetryMax)
	return true
}

// circuitAddrs are the addresses at which a device holding a reservation
// on one of relays can be dialled: <relay addr>/p2p/<relay>/p2p-circuit.
// The device's own ID is added by the dial (peer.AddrInfo.ID).
func circuitAddrs(relays []peer.AddrInfo) []ma.Multiaddr {
	var out []ma.Multiaddr
	for _, r := range relays {
		circuit, err := ma.NewMultiaddr("/p2p/" + r.ID.String() + "/p2p-circuit")
		if err != nil {
			continue
		}
		for _, a := range r.Addrs {
			out = append(out, a.Encapsulate(circuit))
		}
	}
	return out
}

// dialViaRelays dials every member of this device's vaults that it has no
// connection to at all through the relays it holds a reservation on: a
// member that holds a reservation on the same relay answers, and DCUtR
// may then turn the relayed connection into a direct one. A member that
// stays reachable only through relays is dialled again from time to time
// (relayDialer.stale), so that DCUtR is tried again. Of two members, the
// one whose ID sorts higher dials only after relayDialDefer without any
// connection (relayDefer). The circuit addresses go into the peerstore
// (host.Connect adds them), so later dials of the member try them too.
func (r *Reservations) dialViaRelays(ctx context.Context, relays []peer.AddrInfo, d *relayDialer) {
	addrs := circuitAddrs(relays)
	if len(addrs) == 0 {
		return
	}
	self := r.Self
	done := map[keys.DeviceID]bool{}
	for _, dev := range r.Members() {
		if dev == self || done[dev] || r.Now().Before(d.next[dev]) {
			continue
		}
		done[dev] = true
		pid, err := p2p.PeerIDOf(dev)
		if err != nil {
			continue
		}
		wait := relayDefer(self, dev)
		switch r.Host.Network().Connectedness(pid) {
		case network.Connected:
			d.punchWait[dev] = 0
			d.reached(dev)
			continue
		case network.Limited: // relayed only
			d.reached(dev)
			if !d.stale(dev, r.Host.Network().ConnsToPeer(pid), r.Now()) {
				continue
			}
			if wait > 0 {
				// Both may have closed at once (both dialled): the
				// lower one dials again first.
				d.unreached[dev] = r.Now()
				continue
			}
		default:
			if !d.waited(dev, r.Now(), wait) {
				continue
			}
		}
		// A limited (relayed) connection is what this dial is for.
		dctx, cancel := context.WithTimeout(network.WithAllowLimitedConn(ctx, "weft-relayed-dial"), reserveTimeout)
		err = r.Host.Connect(dctx, peer.AddrInfo{ID: pid, Addrs: addrs})
		cancel()
		if err != nil {
			d.backoff[dev] = min(max(2*d.backoff[dev], retryMin), retryMax)
			d.next[dev] = r.Now().Add(d.backoff[dev])
			if wait > 0 {
				d.unreached[dev] = r.Now() // defer the next try too, not only the first
			}
			r.Log.Debug("dialling member through relay", "peer", dev, "retry_in", d.backoff[dev], "err", err)
			continue
		}
		d.backoff[dev] = 0
	}
}
