package wire

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClockMessageGolden(t *testing.T) {
	prefix := []byte{0xde, 0xad}
	tests := []struct {
		name  string
		msg   message
		hex   string
		parse func([]byte) (any, error)
	}{
		{"probe", ClockProbe{Sent: 0x0102030405060708}, "0102030405060708",
			func(p []byte) (any, error) { return ParseClockProbe(p) }},
		{"probe before 1970", ClockProbe{Sent: -1}, "ffffffffffffffff",
			func(p []byte) (any, error) { return ParseClockProbe(p) }},
		{"reply", ClockReply{Sent: 1, Received: 2, Replied: -2},
			"0000000000000001" + "0000000000000002" + "fffffffffffffffe",
			func(p []byte) (any, error) { return ParseClockReply(p) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.msg.AppendBinary(bytes.Clone(prefix))
			if !bytes.HasPrefix(got, prefix) {
				t.Fatalf("prefix lost: %x", got)
			}
			if h := hex.EncodeToString(got[len(prefix):]); h != tt.hex {
				t.Fatalf("got %s, want %s", h, tt.hex)
			}
			back, err := tt.parse(got[len(prefix):])
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if d := cmp.Diff(tt.msg, back); d != "" {
				t.Errorf("round trip (-want +got):\n%s", d)
			}
		})
	}
}

func TestClockMessageRejects(t *testing.T) {
	for _, p := range [][]byte{nil, make([]byte, 7), make([]byte, 9)} {
		if _, err := ParseClockProbe(p); err == nil {
			t.Errorf("probe of %d bytes parsed", len(p))
		}
	}
	for _, p := range [][]byte{nil, make([]byte, 23), make([]byte, 25)} {
		if _, err := ParseClockReply(p); err == nil {
			t.Errorf("reply of %d bytes parsed", len(p))
		}
	}
}

// FuzzParseClock checks the clock parsers never panic and that whatever
// parses re-encodes to exactly its input.
func FuzzParseClock(f *testing.F) {
	f.Add(ClockProbe{Sent: 1 << 60}.AppendBinary(nil))
	f.Add(ClockReply{Sent: 1, Received: 2, Replied: 3}.AppendBinary(nil))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, p []byte) {
		if m, err := ParseClockProbe(p); err == nil && !bytes.Equal(m.AppendBinary(nil), p) {
			t.Fatalf("probe re-encodes to %x, input %x", m.AppendBinary(nil), p)
		}
		if m, err := ParseClockReply(p); err == nil && !bytes.Equal(m.AppendBinary(nil), p) {
			t.Fatalf("reply re-encodes to %x, input %x", m.AppendBinary(nil), p)
		}
	})
}
