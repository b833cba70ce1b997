package clock

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

func TestHLCNext(t *testing.T) {
	const now = 1_000_000
	ahead := MaxAhead.Milliseconds()
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
			if got := HLCNext(tt.last, tt.now); got != tt.want {
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
		old     []time.Duration // measured more than SampleTTL ago
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
			var c State
			i := byte(1)
			for _, o := range tt.offsets {
				c.Set(keys.DeviceID{i}, Sample{Offset: o, At: now.Add(-time.Minute)})
				i++
			}
			for _, o := range tt.old {
				c.Set(keys.DeviceID{i}, Sample{Offset: o, At: now.Add(-SampleTTL - time.Minute)})
				i++
			}
			if got := c.Correction(now); got != tt.want {
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
	s := NTPSample(t1, t2, t3, t4, 0)
	if s.Offset != time.Duration(off) {
		t.Errorf("offset: got %v, want %v", s.Offset, time.Duration(off))
	}
	if s.RTT != 20*time.Millisecond {
		t.Errorf("rtt: got %v, want 20ms", s.RTT)
	}
	// Asymmetric delay (30 ms out, 0 back) errs by half the round trip,
	// never by more.
	s = NTPSample(t1, t1+30*ms+off, t1+30*ms+off, t1+30*ms, 0)
	if d := s.Offset - time.Duration(off); d.Abs() > s.RTT/2 {
		t.Errorf("error %v beyond half the round trip %v", d, s.RTT/2)
	}
}

// Measure and Answer over a pipe: the answerer's clock is 48 h ahead,
// and the offset measured is within half the round trip of it.
func TestMeasureAnswer(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ahead := 48 * time.Hour
	done := make(chan struct{})
	go func() {
		defer close(done)
		Answer(wire.NewConn(b, nil), func() time.Time { return time.Now().Add(ahead) })
	}()
	s, err := Measure(wire.NewConn(a, nil), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	if d := (s.Offset - ahead).Abs(); d > s.RTT/2+time.Millisecond {
		t.Errorf("offset %v, want %v within half the round trip %v", s.Offset, ahead, s.RTT)
	}
	if s.At.IsZero() {
		t.Error("the sample does not say when it was taken")
	}
}

// A reply that answers another probe than the one sent is refused.
func TestMeasureRefusesAReplyToAnotherProbe(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		f := wire.NewConn(b, nil)
		if _, err := f.ExpectLimit(wire.MsgClockProbe, wire.MaxClockProbeFrame); err != nil {
			return
		}
		_ = f.Send(wire.MsgClockReply, wire.ClockReply{Sent: 1, Received: 2, Replied: 3})
		_ = f.Flush()
	}()
	_, err := Measure(wire.NewConn(a, nil), time.Now)
	if !errors.Is(err, wire.ErrUnexpected) {
		t.Fatalf("got %v, want wire.ErrUnexpected", err)
	}
}
