package node

import (
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// What other devices hold, as a relay says. Two devices that reach each
// other only through a relay's store (behind NATs that defeat hole
// punching) never exchange a LogStatus, and showed each other
// peers[].in_sync false even once identical. A relay hears every connected
// device's LogStatus and passes the others' on (wire.Holds,
// relay/holds.go); peers[].in_sync then counts what a device holds
// however the data reached it. The relay could lie about it, as it could
// about what it holds itself: a relay is trusted with availability, never
// with content (docs/security.md).

// noteRelayHolds records what relay r says the devices it lists hold.
func (v *vault) noteRelayHolds(r keys.DeviceID, h wire.Holds) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.heldViaRelay == nil {
		v.heldViaRelay = map[keys.DeviceID]map[keys.DeviceID]protocol.Vector{}
	}
	m := v.heldViaRelay[r]
	if m == nil {
		m = map[keys.DeviceID]protocol.Vector{}
		v.heldViaRelay[r] = m
	}
	for _, d := range h.Devices {
		if d.Device == v.n.id.ID() {
			continue
		}
		m[d.Device] = protocol.Vector(wire.VectorMap(d.Vector))
	}
}

// peerHoldsLocked is what d holds as far as this device knows: per author
// the highest of what d itself said and what any relay said of it. v.mu
// must be held.
func (v *vault) peerHoldsLocked(d keys.DeviceID) protocol.Vector {
	out := protocol.Vector{}
	for a, s := range v.peers.Of(d) {
		out[a] = s
	}
	for _, m := range v.heldViaRelay {
		for a, s := range m[d] {
			out[a] = max(out[a], s)
		}
	}
	return out
}
