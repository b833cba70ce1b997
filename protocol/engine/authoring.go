package engine

import (
	"fmt"

	"github.com/weftsync/weft/protocol/keys"
)

// AuthoringInput is what AuthoringGate needs to know.
type AuthoringInput struct {
	Head uint64 // this device's own head
	// Heard is, per peer or relay heard from since the start, the highest
	// sequence of this device's log it said it holds.
	Heard map[keys.DeviceID]uint64
	Peers []keys.DeviceID // the vault's other member devices and its relays
	// LostTo is the last sequence of this device's log that its database
	// lost at open, 0 if none.
	LostTo      uint64
	MembersLost bool // the membership log is damaged
	// Forked is set once a peer sent an entry of this log other than the
	// one held here: what it names above the head cannot be taken back.
	Forked bool
}

// AuthoringGate says whether a device may author entries again after a
// start, and if not why. After a start a device cannot tell from its own
// disk whether it still holds the whole of its own log (a segment cut
// short, a home restored from an older copy); authoring then would reuse
// sequence numbers peers hold, a fork they refuse. So authoring waits
// until this says it may open:
//
//   - never while the membership is lost: who else could hold the log is
//     not known;
//   - never while a peer named a sequence of this device's log above its
//     head: those entries are to be taken back first (unless the log has
//     forked: then they never chain here, and holding would stop this
//     device for good without mending anything);
//   - at once when no other device or relay is a member: nobody else can
//     hold any of the log;
//   - otherwise once some peer's vector is heard, and, if the database
//     lost entries of this log at open, once they are back or every peer
//     has been heard from (then nobody holds them, and no entry with those
//     numbers exists anywhere).
func AuthoringGate(in AuthoringInput) (open bool, reason string) {
	if in.MembersLost {
		return false, "the membership log is damaged; waiting for a member to send it again"
	}
	var want uint64
	var by keys.DeviceID
	for d, s := range in.Heard {
		if s > want || s == want && d.String() < by.String() {
			want, by = s, d
		}
	}
	if want > in.Head && !in.Forked {
		return false, fmt.Sprintf("%s holds this device's log up to %d, this device up to %d; taking the rest back", by.Short(), want, in.Head)
	}
	if len(in.Peers) == 0 {
		return true, ""
	}
	if len(in.Heard) == 0 {
		return false, "waiting for a peer to say how much of this device's log it holds"
	}
	if in.LostTo > in.Head {
		for _, p := range in.Peers {
			if _, ok := in.Heard[p]; !ok {
				return false, fmt.Sprintf("entries %d to %d of this device's log were lost here; waiting for a peer that holds them", in.Head+1, in.LostTo)
			}
		}
	}
	return true, ""
}
