package clock

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

const (
	// MaxAhead is how far past the corrected clock a seen entry time may
	// be and still be followed.
	MaxAhead = time.Minute
	// Probes is how many probes one measurement sends; the one with the
	// shortest round trip is kept.
	Probes = 4
	// ProbeEvery is how often each connected member is measured.
	ProbeEvery = 10 * time.Minute
	// RetryAfter is the wait after a failed measurement.
	RetryAfter = time.Minute
	// CheckEvery is how often the agent looks for members to measure
	// while a connected member has no current measurement (a member that
	// just connected waits at most this long; its connection also wakes
	// the agent's clock loop, which may be too early for its answer).
	CheckEvery = 2 * time.Second
	// CheckIdle is how often it looks while every connected member has a
	// current measurement: it only bounds how late the next one
	// (ProbeEvery) comes. Looking every CheckEvery regardless woke an idle
	// agent 30 times a minute (issue 16's idle CPU).
	CheckIdle = 30 * time.Second
	// SampleTTL is how long a measurement counts towards the correction
	// after it was taken (a disconnected member's last one stays in until
	// then, so an offline edit is dated like an online one).
	SampleTTL = 24 * time.Hour
	// Timeout bounds one measurement.
	Timeout = 5 * time.Second
)

// Sample is one measurement of a member's clock.
type Sample struct {
	Offset time.Duration // the member's clock minus this device's
	RTT    time.Duration // the round trip of the probe kept
	At     time.Time     // this device's raw clock when it was taken
}

// Millis is the sample as the doctor reports it: the offset in whole
// milliseconds and its bound (half the round trip) in milliseconds.
func (s Sample) Millis() (skew int64, bound float64) {
	return s.Offset.Milliseconds(), float64((s.RTT / 2).Microseconds()) / 1000
}

// State holds the measurements of members' clocks. The zero value is
// ready; it is safe for concurrent use.
type State struct {
	mu      sync.Mutex // guards the fields below
	samples map[keys.DeviceID]Sample
	tried   map[keys.DeviceID]time.Time // last attempt, success or not
}

// Set records s as d's latest measurement.
func (c *State) Set(d keys.DeviceID, s Sample) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.samples == nil {
		c.samples = map[keys.DeviceID]Sample{}
	}
	c.samples[d] = s
}

// Last returns the last measurement of d's clock.
func (c *State) Last(d keys.DeviceID) (Sample, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.samples[d]
	return s, ok
}

// Measured reports whether d has a measurement taken less than
// ProbeEvery before now.
func (c *State) Measured(d keys.DeviceID, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.samples[d]
	return ok && now.Sub(s.At) < ProbeEvery && now.Sub(s.At) >= 0
}

// Due reports whether d should be measured at now, and notes the attempt.
func (c *State) Due(d keys.DeviceID, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tried == nil {
		c.tried = map[keys.DeviceID]time.Time{}
	}
	if t, ok := c.tried[d]; ok && now.Sub(t) < RetryAfter && now.Sub(t) >= 0 {
		return false
	}
	if s, ok := c.samples[d]; ok && now.Sub(s.At) < ProbeEvery && now.Sub(s.At) >= 0 {
		return false
	}
	c.tried[d] = now
	return true
}

// Correction is how far this device moves its wall clock to date entries:
// the median of 0 (itself) and the offsets of the members measured within
// SampleTTL before now; with an even count, the mean of the middle two.
func (c *State) Correction(now time.Time) time.Duration {
	c.mu.Lock()
	offs := []time.Duration{0}
	for _, s := range c.samples {
		if age := now.Sub(s.At); age >= 0 && age < SampleTTL {
			offs = append(offs, s.Offset)
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

// HLCNext is the hybrid logical clock's step: last is the latest time
// seen or written, now the corrected clock, both unix ms.
func HLCNext(last, now int64) int64 {
	if last >= now && last < now+MaxAhead.Milliseconds() {
		return last + 1
	}
	return now
}

// NTPSample estimates the answerer's offset from the four timestamps of
// one exchange (unix ns: opener sent, answerer received, answerer
// replied, opener received). elapsed is the opener's own measure of t4-t1
// (its monotonic clock), used for the round trip when it is available.
func NTPSample(t1, t2, t3, t4 int64, elapsed time.Duration) Sample {
	off := ((t2 - t1) + (t3 - t4)) / 2
	if elapsed <= 0 {
		elapsed = time.Duration(t4 - t1)
	}
	rtt := elapsed - time.Duration(t3-t2)
	if rtt < 0 {
		rtt = 0
	}
	return Sample{Offset: time.Duration(off), RTT: rtt}
}

// Measure runs the opener's side of /weft/clock/1 on f, whose Hello step
// is done: Probes probes, each stamped with now, and returns the sample
// of the shortest round trip. A reply that answers another probe, or a
// malformed one, is an error.
func Measure(f *wire.Conn, now func() time.Time) (Sample, error) {
	var best Sample
	for i := range Probes {
		t1 := now()
		if err := f.Send(wire.MsgClockProbe, wire.ClockProbe{Sent: t1.UnixNano()}); err != nil {
			return Sample{}, err
		}
		if err := f.Flush(); err != nil {
			return Sample{}, err
		}
		p, err := f.ExpectLimit(wire.MsgClockReply, wire.MaxClockReplyFrame)
		if err != nil {
			return Sample{}, fmt.Errorf("clock reply: %w", err)
		}
		t4 := now()
		r, err := wire.ParseClockReply(p)
		if err != nil {
			return Sample{}, fmt.Errorf("clock reply: %w", err)
		}
		if r.Sent != t1.UnixNano() {
			return Sample{}, fmt.Errorf("clock reply: %w: answers another probe", wire.ErrUnexpected)
		}
		smp := NTPSample(t1.UnixNano(), r.Received, r.Replied, t4.UnixNano(), t4.Sub(t1))
		smp.At = t4
		if i == 0 || smp.RTT < best.RTT {
			best = smp
		}
	}
	return best, nil
}

// Answer runs the answerer's side of /weft/clock/1 on f, whose Hello
// step is done: up to Probes probes, each answered with now. It returns
// when the opener stops or errs; a malformed probe is answered with a
// protocol error.
func Answer(f *wire.Conn, now func() time.Time) {
	for range Probes {
		p, err := f.ExpectLimit(wire.MsgClockProbe, wire.MaxClockProbeFrame)
		t2 := now()
		if err != nil {
			return
		}
		pr, err := wire.ParseClockProbe(p)
		if err != nil {
			f.SendError(wire.CodeProtocol, err.Error())
			return
		}
		if err := f.Send(wire.MsgClockReply, wire.ClockReply{Sent: pr.Sent, Received: t2.UnixNano(), Replied: now().UnixNano()}); err != nil {
			return
		}
		if err := f.Flush(); err != nil {
			return
		}
	}
}
