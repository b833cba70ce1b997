package wire

import "encoding/binary"

// Frame limits (type byte plus payload) of the clock messages: each is
// exactly its message, so a reader allocates nothing beyond it.
const (
	MaxClockProbeFrame = 1 + 8
	MaxClockReplyFrame = 1 + 3*8
)

// ClockProbe asks the answerer of a /weft/clock/1 stream for its clock.
// Sent is the opener's clock when it sent the probe, in unix nanoseconds.
//
// Payload layout:
//
//	sent (8 bytes, big-endian two's complement)
//
// Every 8 bytes are a valid probe, so a probe has one encoding.
type ClockProbe struct {
	Sent int64
}

// AppendBinary appends the payload of p to b.
func (p ClockProbe) AppendBinary(b []byte) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(p.Sent))
}

// ParseClockProbe parses a ClockProbe payload.
func ParseClockProbe(p []byte) (ClockProbe, error) {
	ps := parser{b: p}
	var c ClockProbe
	if b := ps.fixed(8, "probe sent"); b != nil {
		c.Sent = int64(binary.BigEndian.Uint64(b))
	}
	if err := ps.end(); err != nil {
		return ClockProbe{}, err
	}
	return c, nil
}

// ClockReply answers one ClockProbe, NTP fashion: the probe's Sent echoed,
// and the answerer's clock when the probe arrived (Received) and when the
// reply left (Replied), all unix nanoseconds. With the opener's clock at
// the reply's arrival (t4), the opener estimates the answerer's clock
// offset as ((Received-Sent)+(Replied-t4))/2, wrong by at most half the
// round trip (t4-Sent)-(Replied-Received); sync delays play no part.
//
// Payload layout:
//
//	sent (8 bytes) | received (8 bytes) | replied (8 bytes)
//
// each big-endian two's complement.
type ClockReply struct {
	Sent     int64
	Received int64
	Replied  int64
}

// AppendBinary appends the payload of r to b.
func (r ClockReply) AppendBinary(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(r.Sent))
	b = binary.BigEndian.AppendUint64(b, uint64(r.Received))
	return binary.BigEndian.AppendUint64(b, uint64(r.Replied))
}

// ParseClockReply parses a ClockReply payload.
func ParseClockReply(p []byte) (ClockReply, error) {
	ps := parser{b: p}
	var r ClockReply
	for _, f := range []*int64{&r.Sent, &r.Received, &r.Replied} {
		if b := ps.fixed(8, "clock reply"); b != nil {
			*f = int64(binary.BigEndian.Uint64(b))
		}
	}
	if err := ps.end(); err != nil {
		return ClockReply{}, err
	}
	return r, nil
}
