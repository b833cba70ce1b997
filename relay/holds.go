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
		if r.devGen == nil {
			r.devGen = map[keys.DeviceID]uint64{}
		}
		r.holdsGen++
		r.devGen[dev] = r.holdsGen
		r.grewLocked()
	}
}

// holdsFor returns what the relay knows the vault's current member devices
// other than dev hold, only those whose vector changed after generation
// since (0: all), in Holds messages within holdsFrameBudget, and the
// generation to pass next time. Each device change costs one vector per
// stream, not every device's: with N devices, sending all of them on each
// change was N vectors times N streams for every entry.
func (r *replica) holdsFor(dev keys.DeviceID, since uint64) ([]wire.Holds, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return holdsSince(r.devHolds, r.devGen, dev, since, r.state.IsMember), r.holdsGen
}

// holdsSince is holdsFor's choice, pure: the vectors of the members other
// than dev whose generation is above since, sorted, cut into messages.
func holdsSince(holds map[keys.DeviceID]map[keys.DeviceID]uint64, gens map[keys.DeviceID]uint64, dev keys.DeviceID, since uint64, isMember func(keys.DeviceID) bool) []wire.Holds {
	devs := slices.SortedFunc(maps.Keys(holds), func(a, b keys.DeviceID) int { return bytes.Compare(a[:], b[:]) })
	var out []wire.Holds
	var cur wire.Holds
	size := 0
	for _, d := range devs {
		if d == dev || gens[d] <= since || !isMember(d) {
			continue
		}
		vec := wire.VectorOf(holds[d])
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
	return out
}
