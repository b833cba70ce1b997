package doctor

import (
	"fmt"
	"time"

	"github.com/weftsync/weft/node/api"
)

// clockSkewLimit is the clock difference to a member doctor warns about.
// Below it, skew is the drift of a clock that has not synced for a few
// days and does no harm: entry times are corrected against the members'
// clocks anyway (node/clock.go). Beyond it a skewed clock shows: file
// modification times and conflict-copy names (which come from the file
// system's clock) are minutes off, and entries the device wrote before it
// could measure its members are misdated, which moves conflict winners
// and `restore --at`. The measurement itself is good to half a round trip
// (milliseconds on a LAN), so a warning is never noise.
const clockSkewLimit = time.Minute

// clockSkewFindings warns when p's clock is more than clockSkewLimit
// (beyond the measurement's error) from this device's. The fix names the
// device whose clock is wrong when the members' median says which one:
// selfCorrection, this device's correction, is that median, so a peer
// that agrees with it is right and this device is wrong, and the other
// way round.
func clockSkewFindings(p api.PeerDiagnosis, selfCorrection time.Duration, name string) []api.Finding {
	if p.ClockSkewMillis == nil {
		return nil
	}
	skew := time.Duration(*p.ClockSkewMillis) * time.Millisecond
	var bound time.Duration
	if p.ClockErrorMillis != nil {
		bound = time.Duration(*p.ClockErrorMillis * float64(time.Millisecond))
	}
	if skew.Abs()-bound <= clockSkewLimit {
		return nil
	}
	dir := "ahead of"
	if skew < 0 {
		dir = "behind"
	}
	msg := fmt.Sprintf("%s's clock is %s %s this device's", name, skew.Abs().Round(time.Second), dir)
	ntp := "and turn on network time (NTP) there (`timedatectl set-ntp true` on Linux; Date & Time settings on macOS, Windows, phones)"
	var fix string
	switch peerOff, selfOff := skew-selfCorrection, selfCorrection; {
	case peerOff.Abs() <= clockSkewLimit && selfOff.Abs() > clockSkewLimit:
		msg += "; the other members agree with " + name + ", so this device's clock is the wrong one"
		fix = "set this device's clock " + ntp
	case selfOff.Abs() <= clockSkewLimit && peerOff.Abs() > clockSkewLimit:
		fix = "set the clock on " + name + " " + ntp
	default:
		fix = fmt.Sprintf("set the clock on whichever of this device and %s is wrong (compare both with a phone) %s", name, ntp)
	}
	fix += "; until then, sync dates this device's edits by the members' clocks (docs/sync.md, \"Clocks\")"
	return []api.Finding{finding(api.SeverityWarning, "clock-skew", "", "", p.ID, msg, fix)}
}
