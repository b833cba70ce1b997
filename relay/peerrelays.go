package relay

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/protocol/keys"
)

// The relays of one vault sync with each other over the same protocols as
// with devices: each is a source of entries and chunks for the others. A
// relay added to a vault later backfills from the ones already there, even
// while every device is offline, and a device may upload to whichever relay
// it reaches while a device elsewhere downloads from another.
//
// A relay reads from another only what a device could (the signed entries,
// the membership, the encrypted chunks); every entry is verified as from a
// device, and a relay authors nothing. A relay serves another only when
// the vault's membership lists it (an admin put it there).

// relayPeerCheck is how often a replica looks for the vault's other relays
// it is not connected to.
const relayPeerCheck = 15 * time.Second

// isSource reports whether dev, on peer p, may read rep's vault from this
// relay and is read from: a current member, or another relay the vault's
// membership lists.
func (r *Relay) isSource(rep *replica, p peer.ID, dev keys.DeviceID) bool {
	return !rep.gone.Load() && (rep.isMember(dev) || r.isPeerRelay(rep, p))
}

// isPeerRelay reports whether p is another relay of rep's vault.
func (r *Relay) isPeerRelay(rep *replica, p peer.ID) bool {
	return p != r.host.ID() && Listed(rep.relays(), p)
}

// maxPeerRelays bounds the other relays of one vault a relay dials: a
// membership lists a few relays, and one that lists thousands (anyone can
// enroll a vault) must not turn the relay into a scanner.
const maxPeerRelays = 8

// peerRelays lists the vault's other relays, at most maxPeerRelays, and
// none when the vault does not list this relay (removed from it).
func (r *Relay) peerRelays(rep *replica) []peer.AddrInfo {
	relays := rep.relays()
	if !Listed(relays, r.host.ID()) {
		return nil
	}
	var out []peer.AddrInfo
	for _, a := range relays {
		if len(out) == maxPeerRelays {
			break
		}
		info, _, err := ParseAddr(a)
		if err != nil || info.ID == r.host.ID() {
			continue
		}
		out = append(out, info)
	}
	return out
}

// relayPeerRetryPasses is how many passes of relayPeersLoop go by between
// asking the other relays again for every chunk they lacked (4 minutes):
// each retry re-sends the whole list of chunks still missing to every
// source, too much to do every 15 s for a vault whose author is away.
const relayPeerRetryPasses = 16

// relayPeersLoop keeps rep connected to the vault's other relays and a
// log stream open from each (startPull), until ctx ends.
func (r *Relay) relayPeersLoop(ctx context.Context, rep *replica) {
	tick := time.NewTicker(relayPeerCheck)
	defer tick.Stop()
	for pass := 1; ; pass++ {
		for _, info := range r.peerRelays(rep) {
			if ctx.Err() != nil {
				return
			}
			if r.host.Network().Connectedness(info.ID) != network.Connected {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := r.host.Connect(cctx, info)
				cancel()
				if err != nil {
					r.log.Debug("connecting to the vault's other relay", "vault", rep.id, "relay", info.ID, "err", err)
					continue
				}
			}
			r.fromPeerRelay(rep, info.ID, pass%relayPeerRetryPasses == 0, false)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// fromPeerRelay starts reading rep's vault from relay p: its log, and its
// chunks in the next fetch rounds. Chunks nobody had are asked for again
// when the pull is new (p may hold them) or retry says so: what the other
// relay lacked it may have fetched since, from a device this relay never
// sees. A new connection wakes a pull already running (wake); the
// periodic look leaves it in its backoff.
func (r *Relay) fromPeerRelay(rep *replica, p peer.ID, retry, wake bool) {
	dev, err := DeviceIDOf(p)
	if err != nil {
		return
	}
	if r.startPull(rep, p, dev, wake) || retry {
		rep.retryUnavailable()
	}
}

// peerOf is dev's peer ID ("" if it has none, which no relay lists).
func peerOf(dev keys.DeviceID) peer.ID {
	p, _ := PeerIDOf(dev)
	return p
}
