package heard

import (
	"sync"
	"time"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// RelayReports is what each of a vault's relays last said beyond its own
// holdings: the vault's quota there (or why enrolling failed), and what it
// says the other devices it serves hold (wire.Holds). Two devices that
// reach each other only through a relay's store (behind NATs that defeat
// hole punching) never exchange a LogStatus, and showed each other
// peers[].in_sync false even once identical; a relay hears every
// connected device's LogStatus and passes the others' on (relay/holds.go),
// so in_sync counts what a device holds however the data reached it. The
// relay could lie about it, as it could about what it holds itself: a
// relay is trusted with availability, never with content
// (docs/security.md). Safe for concurrent use; its lock is a leaf.
type RelayReports struct {
	mu    sync.Mutex
	quota map[keys.DeviceID]RelayQuota
	holds map[keys.DeviceID]map[keys.DeviceID]protocol.Vector // relay -> device -> what the relay says it holds
}

// RelayQuota is what a relay last said about the vault's quota there.
type RelayQuota struct {
	Status    wire.RelayStatus
	At        time.Time
	Err       string    // why enrolling failed, if it did
	FullSince time.Time // since when the quota has been reported full (set by SetQuota)
}

// SetQuota records what relay d said. It reports whether the quota has
// just become full, so that the caller says so once, not on every report.
// A quota that stays full keeps the time it was first reported full.
func (r *RelayReports) SetQuota(d keys.DeviceID, q RelayQuota) (becameFull bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.quota == nil {
		r.quota = map[keys.DeviceID]RelayQuota{}
	}
	prev, had := r.quota[d]
	q.FullSince = time.Time{}
	if q.Status.Full {
		q.FullSince = q.At
		if had && prev.Status.Full && !prev.FullSince.IsZero() {
			q.FullSince = prev.FullSince
		}
	}
	r.quota[d] = q
	return q.Status.Full && (!had || !prev.Status.Full)
}

// Quota is what relay d last said about the quota, if it said anything.
func (r *RelayReports) Quota(d keys.DeviceID) (RelayQuota, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q, ok := r.quota[d]
	return q, ok
}

// NoteHolds records what relay says the devices it lists hold; what it
// says of self is left out (this device knows what it holds).
func (r *RelayReports) NoteHolds(relay, self keys.DeviceID, h wire.Holds) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.holds == nil {
		r.holds = map[keys.DeviceID]map[keys.DeviceID]protocol.Vector{}
	}
	m := r.holds[relay]
	if m == nil {
		m = map[keys.DeviceID]protocol.Vector{}
		r.holds[relay] = m
	}
	for _, d := range h.Devices {
		if d.Device == self {
			continue
		}
		m[d.Device] = protocol.Vector(wire.VectorMap(d.Vector))
	}
}

// Holds is what device d holds as far as this device knows: per author
// the highest of direct (what d said itself) and what any relay said of
// it. The result is new; direct is not changed.
func (r *RelayReports) Holds(d keys.DeviceID, direct protocol.Vector) protocol.Vector {
	out := protocol.Vector{}
	for a, s := range direct {
		out[a] = s
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.holds {
		for a, s := range m[d] {
			out[a] = max(out[a], s)
		}
	}
	return out
}
