package node

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
	"github.com/weftsync/weft/store/vaultdb"
)

// knownPeersMeta is the metadata key under which a vault remembers where
// its members were last reachable.
const knownPeersMeta = "known-peers"

// knownPeers returns the remembered addresses of the vault's members.
func (v *vault) knownPeers() map[keys.DeviceID][]string {
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
	m := map[string][]string{}
	for k, a := range cur {
		m[k.String()] = a
	}
	m[d.String()] = addrs
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding known peers: %w", err)
	}
	u := &vaultdb.Update{}
	u.SetMeta(knownPeersMeta, b)
	return v.db.Commit(u)
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
