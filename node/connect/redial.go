package connect

import (
	"time"

	"github.com/weftsync/weft/protocol/keys"
)

// Redial backoff bounds: the first retry after a failed dial waits
// redialMin, each further failure doubles the wait, up to redialMax. A
// member that is switched off costs one dial a minute; one that comes back
// is reached within a minute, usually sooner (mDNS, the relay's presence
// notes and its own dial to us do not wait for this schedule).
const (
	redialMin = time.Second
	redialMax = time.Minute
)

// Redial is node's dial loop's per-device schedule of dials to remembered
// addresses. It is pure: the loop passes the time in.
type Redial struct {
	next map[keys.DeviceID]time.Time
	wait map[keys.DeviceID]time.Duration
}

// NewRedial returns an empty schedule: every device is due.
func NewRedial() *Redial {
	return &Redial{next: map[keys.DeviceID]time.Time{}, wait: map[keys.DeviceID]time.Duration{}}
}

// Due reports whether d may be dialled at now.
func (r *Redial) Due(d keys.DeviceID, now time.Time) bool { return !now.Before(r.next[d]) }

// Failed records a failed dial of d at now and returns how long d now
// waits before the next one.
func (r *Redial) Failed(d keys.DeviceID, now time.Time) time.Duration {
	w := min(max(r.wait[d]*2, redialMin), redialMax)
	r.wait[d] = w
	r.next[d] = now.Add(w)
	return w
}

// Succeeded records a successful dial of d: a later failure starts again
// from redialMin.
func (r *Redial) Succeeded(d keys.DeviceID) {
	delete(r.wait, d)
	delete(r.next, d)
}
