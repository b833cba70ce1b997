package node

import (
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/keys"
)

func TestHLCNext(t *testing.T) {
	const now = 1_000_000
	ahead := hlcMaxAhead.Milliseconds()
	tests := []struct {
		name      string
		last, now int64
		want      int64
	}{
		{"clock ahead of everything seen", now - 5, now, now},
		{"seen the same millisecond", now, now, now + 1},
		{"seen a little ahead: stays above it", now + 500, now, now + 501},
		{"seen just inside the bound", now + ahead - 1, now, now + ahead},
		{"seen too far ahead: a skewed clock, not followed", now + ahead, now, now},
		{"seen 48 h ahead", now + 48*3600*1000, now, now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hlcNext(tt.last, tt.now); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestClockCorrection(t *testing.T) {
	h := time.Hour
	now := time.Unix(1_800_000_000, 0)
	tests := []struct {
		name    string
		offsets []time.Duration // one member each
		old     []time.Duration // measured more than clockSampleTTL ago
		want    time.Duration
	}{
		{"alone", nil, nil, 0},
		{"one member 96 h ahead: meet in the middle", []time.Duration{96 * h}, nil, 48 * h},
		{"one member 96 h behind", []time.Duration{-96 * h}, nil, -48 * h},
		{"two members agree with each other: follow them", []time.Duration{48 * h, 48*h + time.Second}, nil, 48 * h},
		{"one skewed member among right ones is outvoted", []time.Duration{time.Millisecond, -2 * time.Millisecond, 48 * h}, nil, time.Millisecond / 2},
		{"stale measurements do not count", []time.Duration{time.Second}, []time.Duration{48 * h, 48 * h}, time.Second / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c clockState
			i := byte(1)
			for _, o := range tt.offsets {
				c.set(keys.DeviceID{i}, clockSample{offset: o, at: now.Add(-time.Minute)})
				i++
			}
			for _, o := range tt.old {
				c.set(keys.DeviceID{i}, clockSample{offset: o, at: now.Add(-clockSampleTTL - time.Minute)})
				i++
			}
			if got := c.correction(now); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNTPSample(t *testing.T) {
	const ms = int64(time.Millisecond)
	// The answerer is 48 h ahead; 10 ms each way; it takes 1 ms to reply.
	off := int64(48 * time.Hour)
	t1 := int64(1_800_000_000) * int64(time.Second)
	t2 := t1 + 10*ms + off
	t3 := t2 + 1*ms
	t4 := t1 + 21*ms
	s := ntpSample(t1, t2, t3, t4, 0)
	if s.offset != time.Duration(off) {
		t.Errorf("offset: got %v, want %v", s.offset, time.Duration(off))
	}
	if s.rtt != 20*time.Millisecond {
		t.Errorf("rtt: got %v, want 20ms", s.rtt)
	}
	// Asymmetric delay (30 ms out, 0 back) errs by half the round trip,
	// never by more.
	s = ntpSample(t1, t1+30*ms+off, t1+30*ms+off, t1+30*ms, 0)
	if d := s.offset - time.Duration(off); d.Abs() > s.rtt/2 {
		t.Errorf("error %v beyond half the round trip %v", d, s.rtt/2)
	}
}
