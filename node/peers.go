package node

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
	"github.com/weftsync/weft/store/vaultdb"
)

// knownPeersMeta is the metadata key under which a vault remembers where
// its members were last reachable.
const knownPeersMeta = "known-peers"

// knownPeers returns the remembered addresses of the vault's members. The
// map is the caller's; the address slices are shared and must not be
// written in place (append is safe: they are clipped).
//
// The list is decoded from the database once and then kept in memory:
// dialLoop reads it every second, and decoding it each time (JSON and a
// base58 device ID per member) was, with a few hundred members, most of
// an idle node's CPU (a quarter of all CPU in a 300-device simulation).
func (v *vault) knownPeers() map[keys.DeviceID][]string {
	n := v.n
	n.knownMu.Lock()
	defer n.knownMu.Unlock()
	m, ok := n.known[v]
	if !ok {
		m = v.loadKnownPeers()
		v.cacheKnownPeersLocked(m)
		m = n.known[v]
	}
	if m == nil {
		return nil
	}
	return maps.Clone(m)
}

// cacheKnownPeersLocked keeps known (clipped) as the decoded list.
// n.knownMu must be held.
func (v *vault) cacheKnownPeersLocked(known map[keys.DeviceID][]string) {
	var m map[keys.DeviceID][]string
	if known != nil {
		m = make(map[keys.DeviceID][]string, len(known))
		for d, a := range known {
			m[d] = slices.Clip(slices.Clone(a))
		}
	}
	if v.n.known == nil {
		v.n.known = map[*vault]map[keys.DeviceID][]string{}
	}
	v.n.known[v] = m
}

// loadKnownPeers decodes the remembered addresses from the database.
func (v *vault) loadKnownPeers() map[keys.DeviceID][]string {
	b, ok, err := v.db.Meta(knownPeersMeta)
	if err != nil || !ok {
		return nil
	}
	var m map[string][]string
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	out := make(map[keys.DeviceID][]string, len(m))
	for s, addrs := range m {
		d, err := keys.ParseDeviceID(s)
		if err == nil {
			out[d] = addrs
		}
	}
	return out
}

// setKnownPeer remembers addrs for d (replacing what was there), durably.
func (v *vault) setKnownPeer(d keys.DeviceID, addrs []string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	cur := v.knownPeers()
	if slices.Equal(cur[d], addrs) {
		return nil
	}
	if cur == nil {
		cur = map[keys.DeviceID][]string{}
	}
	cur[d] = addrs
	return v.storeKnownPeersLocked(cur)
}

// learnPeers remembers, from a peer exchange, the addresses of members
// this device knows no address for yet, in one durable commit. A member
// of a vault with hundreds of devices is sent hundreds of addresses at the
// start of every log stream, before any entry; one commit (one fsync) and
// one re-encoding of the whole list per address held those entries back:
// in the simulation, S2 with 200 devices built by pairing delivered the
// edit to its first device only after about 10 s, against 1 s when the
// devices had no addresses to exchange.
func (v *vault) learnPeers(ps wire.Peers) error {
	self := v.n.id.ID()
	v.mu.Lock()
	defer v.mu.Unlock()
	cur := v.knownPeers()
	if cur == nil {
		cur = map[keys.DeviceID][]string{}
	}
	added := 0
	for _, p := range ps.Peers {
		if p.Device == self || len(p.Addrs) == 0 || !v.members.IsMember(p.Device) {
			continue
		}
		if _, known := cur[p.Device]; known {
			continue
		}
		cur[p.Device] = p.Addrs
		added++
	}
	if added == 0 {
		return nil
	}
	return v.storeKnownPeersLocked(cur)
}

// storeKnownPeersLocked replaces the remembered addresses with known,
// durably. v.mu must be held, so that read-modify-write cycles of the
// list do not lose each other's additions.
func (v *vault) storeKnownPeersLocked(known map[keys.DeviceID][]string) error {
	m := make(map[string][]string, len(known))
	for k, a := range known {
		m[k.String()] = a
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding known peers: %w", err)
	}
	u := &vaultdb.Update{}
	u.SetMeta(knownPeersMeta, b)
	if err := v.db.Commit(u); err != nil {
		return err
	}
	v.n.knownMu.Lock()
	v.cacheKnownPeersLocked(known)
	v.n.knownMu.Unlock()
	return nil
}

// peerAddrs lists where the vault's members other than to listen, from
// what this device remembers, for peer exchange.
func (v *vault) peerAddrs(to keys.DeviceID) wire.Peers {
	var out wire.Peers
	known := v.knownPeers()
	for _, d := range v.memberList() { // sorted by device
		if d == to || d == v.n.id.ID() || len(known[d]) == 0 {
			continue
		}
		out.Peers = append(out.Peers, wire.PeerAddrs{Device: d, Addrs: known[d]})
	}
	return out
}
