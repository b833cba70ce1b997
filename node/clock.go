package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	p2pprotocol "github.com/libp2p/go-libp2p/core/protocol"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// Clocks (docs/sync.md, "Clocks").
//
// A device's wall clock can be wrong by days. Two things must not follow
// it: which of two concurrent versions keeps the name (protocol.
// WinnerOrder orders by the entries' Time) and what `restore --at` means.
// So the Time a device writes into an entry is a hybrid logical clock:
//
//   - its physical part is this device's wall clock corrected by the
//     median of the offsets measured to the members it talks to (this
//     device counting as offset 0): with one device 48 h slow and one
//     48 h fast, each corrects to the middle; with a third, right, device
//     the median is that device's clock;
//   - it never goes back and is above every time seen in the vault's
//     entries, so an edit made after its author saw another entry is
//     later than that entry, whatever the clocks;
//   - except that a time seen more than hlcMaxAhead past the corrected
//     clock is a skewed device's and is not followed: following it would
//     let that one clock date every later entry of the vault.
//
// Offsets are measured NTP fashion over /weft/clock/1 (wire.ClockProbe):
// the opener stamps a probe, the answerer stamps its arrival and its
// reply, the opener stamps the reply's arrival; the estimate is wrong by
// at most half the round trip, and neither side's sync work is inside
// the measured interval (the estimate doctor used before timed entries
// from their writing to their arrival, and reported sync delays of a
// minute as skew).

// ProtoClock is the stream protocol that measures a member's clock.
const ProtoClock p2pprotocol.ID = wire.ProtoClock

const (
	// hlcMaxAhead is how far past the corrected clock a seen entry time
	// may be and still be followed.
	hlcMaxAhead = time.Minute
	// clockProbes is how many probes one measurement sends; the one with
	// the shortest round trip is kept.
	clockProbes = 4
	// clockProbeEvery is how often each connected member is measured.
	clockProbeEvery = 10 * time.Minute
	// clockRetryAfter is the wait after a failed measurement.
	clockRetryAfter = time.Minute
	// clockCheckEvery is how often the loop looks for members to measure
	// (a member that just connected waits at most this long).
	clockCheckEvery = 2 * time.Second
	// clockSampleTTL is how long a measurement counts towards the
	// correction after it was taken (a disconnected member's last one
	// stays in until then, so an offline edit is dated like an online one).
	clockSampleTTL = 24 * time.Hour
	// clockTimeout bounds one measurement.
	clockTimeout = 5 * time.Second
)

// clockSample is one measurement of a member's clock.
type clockSample struct {
	offset time.Duration // the member's clock minus this device's
	rtt    time.Duration // the round trip of the probe kept
	at     time.Time     // this device's raw clock when it was taken
}

// clockState holds the measurements of members' clocks.
type clockState struct {
	mu      sync.Mutex // guards the fields below
	samples map[keys.DeviceID]clockSample
	tried   map[keys.DeviceID]time.Time // last attempt, success or not
}

func (c *clockState) set(d keys.DeviceID, s clockSample) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.samples == nil {
		c.samples = map[keys.DeviceID]clockSample{}
	}
	c.samples[d] = s
}

// sample returns the last measurement of d's clock.
func (c *clockState) sample(d keys.DeviceID) (clockSample, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.samples[d]
	return s, ok
}

// due reports whether d should be measured at now, and notes the attempt.
func (c *clockState) due(d keys.DeviceID, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tried == nil {
		c.tried = map[keys.DeviceID]time.Time{}
	}
	if t, ok := c.tried[d]; ok && now.Sub(t) < clockRetryAfter && now.Sub(t) >= 0 {
		return false
	}
	if s, ok := c.samples[d]; ok && now.Sub(s.at) < clockProbeEvery && now.Sub(s.at) >= 0 {
		return false
	}
	c.tried[d] = now
	return true
}

// correction is how far this device moves its wall clock to date entries:
// the median of 0 (itself) and the offsets of the members measured within
// clockSampleTTL before now; with an even count, the mean of the middle
// two.
func (c *clockState) correction(now time.Time) time.Duration {
	c.mu.Lock()
	offs := []time.Duration{0}
	for _, s := range c.samples {
		if age := now.Sub(s.at); age >= 0 && age < clockSampleTTL {
			offs = append(offs, s.offset)
		}
	}
	c.mu.Unlock()
	return median(offs)
}

// median returns the median of ds (not empty), the mean of the middle two
// for an even count. It sorts ds.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	m := len(ds) / 2
	if len(ds)%2 == 1 {
		return ds[m]
	}
	return ds[m-1] + (ds[m]-ds[m-1])/2
}

// vaultNow is this device's clock corrected against its members': the
// physical part of the entries' hybrid logical clock and the meaning of
// "now" for `restore --at -2h`.
func (n *Node) vaultNow() time.Time {
	now := n.now()
	return now.Add(n.clocks.correction(now))
}

// ClockCorrection is how far this device moves its own clock to date the
// entries it writes and to read `restore --at` times: the median of its
// members' measured clock offsets, this device counting as 0 (docs/sync.md,
// "Clocks"). It is 0 until a member has been measured.
func (n *Node) ClockCorrection() time.Duration { return n.clocks.correction(n.now()) }

// nextEntryTime returns the Time for the next entry this device writes in
// v, in unix ms: the corrected clock, or just above the latest time seen
// in v's entries when that is not below it (and not more than hlcMaxAhead
// past it). v.mu must not be held.
func (v *vault) nextEntryTime() int64 {
	now := v.n.vaultNow().UnixMilli()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.hlc = hlcNext(v.hlc, now)
	return v.hlc
}

// hlcNext is the hybrid logical clock's step: last is the latest time
// seen or written, now the corrected clock, both unix ms.
func hlcNext(last, now int64) int64 {
	if last >= now && last < now+hlcMaxAhead.Milliseconds() {
		return last + 1
	}
	return now
}

// clockLoop measures every connected member's clock when it connects and
// every clockProbeEvery after, until ctx ends.
func (n *Node) clockLoop(ctx context.Context) {
	t := time.NewTicker(clockCheckEvery)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		for _, d := range n.membersToClock() {
			if !n.clocks.due(d, n.now()) {
				continue
			}
			wg.Go(func() {
				if _, err := n.measureClock(ctx, d); err != nil && ctx.Err() == nil {
					n.log.Debug("measuring clock", "peer", d, "err", err)
				}
			})
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// membersToClock lists the devices (not relays) of every vault served
// here that are connected now, each once.
func (n *Node) membersToClock() []keys.DeviceID {
	var out []keys.DeviceID
	for _, v := range n.vaultsNow() {
		for _, c := range n.connectedMembers(v) {
			if v.roster.IsMember(c.dev) && !slices.Contains(out, c.dev) {
				out = append(out, c.dev)
			}
		}
	}
	return out
}

// errNoSharedVault means a device shares no vault served here.
var errNoSharedVault = errors.New("no vault shared with the device")

// measureClock measures d's clock now over /weft/clock/1 and records the
// result.
func (n *Node) measureClock(ctx context.Context, d keys.DeviceID) (clockSample, error) {
	var v *vault
	for _, w := range n.vaultsNow() {
		if w.roster.IsMember(d) {
			v = w
			break
		}
	}
	if v == nil {
		return clockSample{}, errNoSharedVault
	}
	pid, err := PeerIDOf(d)
	if err != nil {
		return clockSample{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, clockTimeout)
	defer cancel()
	s, err := n.host.NewStream(ctx, pid, ProtoClock)
	if err != nil {
		return clockSample{}, fmt.Errorf("opening clock stream: %w", err)
	}
	defer s.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = s.SetDeadline(dl)
	}
	f := n.outboundConn(s, d)
	if err := f.OpenHello(v.id); err != nil {
		_ = s.Reset()
		return clockSample{}, fmt.Errorf("clock hello: %w", err)
	}
	var best clockSample
	for i := range clockProbes {
		t1 := n.now()
		if err := f.Send(wire.MsgClockProbe, wire.ClockProbe{Sent: t1.UnixNano()}); err != nil {
			return clockSample{}, err
		}
		if err := f.Flush(); err != nil {
			return clockSample{}, err
		}
		p, err := f.ExpectLimit(wire.MsgClockReply, wire.MaxClockReplyFrame)
		if err != nil {
			return clockSample{}, fmt.Errorf("clock reply: %w", err)
		}
		t4 := n.now()
		r, err := wire.ParseClockReply(p)
		if err != nil {
			return clockSample{}, fmt.Errorf("clock reply: %w", err)
		}
		if r.Sent != t1.UnixNano() {
			return clockSample{}, fmt.Errorf("clock reply: %w: answers another probe", wire.ErrUnexpected)
		}
		smp := ntpSample(t1.UnixNano(), r.Received, r.Replied, t4.UnixNano(), t4.Sub(t1))
		smp.at = t4
		if i == 0 || smp.rtt < best.rtt {
			best = smp
		}
	}
	n.clocks.set(d, best)
	return best, nil
}

// ntpSample estimates the answerer's offset from the four timestamps of one
// exchange (unix ns: opener sent, answerer received, answerer replied,
// opener received). elapsed is the opener's own measure of t4-t1 (its
// monotonic clock), used for the round trip when it is available.
func ntpSample(t1, t2, t3, t4 int64, elapsed time.Duration) clockSample {
	off := ((t2 - t1) + (t3 - t4)) / 2
	if elapsed <= 0 {
		elapsed = time.Duration(t4 - t1)
	}
	rtt := elapsed - time.Duration(t3-t2)
	if rtt < 0 {
		rtt = 0
	}
	return clockSample{offset: time.Duration(off), rtt: rtt}
}

// handleClock answers a clock stream: the Hello step as on every stream
// (only members and relays of a vault served here get further), then up to
// clockProbes probes, each answered with this device's clock.
func (n *Node) handleClock(s network.Stream) {
	defer s.Close()
	f, _, _, ok := n.openStream(s) // the Hello step, bounded and counted as on every stream
	if !ok {
		return
	}
	_ = s.SetDeadline(time.Now().Add(clockTimeout))
	for range clockProbes {
		p, err := f.ExpectLimit(wire.MsgClockProbe, wire.MaxClockProbeFrame)
		t2 := n.now()
		if err != nil {
			return
		}
		pr, err := wire.ParseClockProbe(p)
		if err != nil {
			f.SendError(wire.CodeProtocol, err.Error())
			return
		}
		if err := f.Send(wire.MsgClockReply, wire.ClockReply{Sent: pr.Sent, Received: t2.UnixNano(), Replied: n.now().UnixNano()}); err != nil {
			return
		}
		if err := f.Flush(); err != nil {
			return
		}
	}
}

// skewFields converts a clock measurement to PeerDiagnosis fields.
func skewFields(s clockSample) (*int64, *float64) {
	ms := s.offset.Milliseconds()
	errMs := float64((s.rtt / 2).Microseconds()) / 1000
	return &ms, &errMs
}
