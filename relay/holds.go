package relay

import (
	"bytes"
	"maps"
	"slices"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// What member devices hold, passed on. The relay pulls each connected
// device's log and so hears its LogStatus: what it holds in full. Two
// devices that reach each other only through the relay never exchange one,
// and showed each other in_sync false even once identical. The relay keeps
// the last vector each device told it and sends the others' to each device
// on its log streams (wire.Holds).

// holdsFrameBudget bounds the payload of one Holds message the relay
// builds; more devices go in further messages.
const holdsFrameBudget = 1 << 20

// noteHolds merges what device dev's LogStatus said into what the relay
// knows it holds (a device's LogStatus after the first on a stream carries
// only the authors that changed) and wakes the log streams if it changed.
func (r *replica) noteHolds(dev keys.DeviceID, st []wire.VectorEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.devHolds == nil {
		r.devHolds = map[keys.DeviceID]map[keys.DeviceID]uint64{}
	}
	cur := r.devHolds[dev]
	if cur == nil {
		cur = map[keys.DeviceID]uint64{}
		r.devHolds[dev] = cur
	}
	changed := false
	for _, e := range st {
		if cur[e.Author] != e.Seq {
			cur[e.Author] = e.Seq
			changed = true
		}
	}
	if changed {
		r.holdsGen++
		r.grewLocked()
	}
}

// holdsFor returns what the relay knows the vault's current member devices
// other than dev hold, in Holds messages within holdsFrameBudget, and a
// generation that changes whenever any of it does.
func (r *replica) holdsFor(dev keys.DeviceID) ([]wire.Holds, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	devs := slices.SortedFunc(maps.Keys(r.devHolds), func(a, b keys.DeviceID) int { return bytes.Compare(a[:], b[:]) })
	var out []wire.Holds
	var cur wire.Holds
	size := 0
	for _, d := range devs {
		if d == dev || !r.state.IsMember(d) {
			continue
		}
		vec := wire.VectorOf(r.devHolds[d])
		need := 32 + 10 + len(vec)*42
		if len(cur.Devices) > 0 && (size+need > holdsFrameBudget || len(cur.Devices) == wire.MaxHoldsDevices) {
			out = append(out, cur)
			cur, size = wire.Holds{}, 0
		}
		cur.Devices = append(cur.Devices, wire.DeviceHolds{Device: d, Vector: vec})
		size += need
	}
	if len(cur.Devices) > 0 {
		out = append(out, cur)
	}
	return out, r.holdsGen
}
