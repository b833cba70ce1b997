package vaultdb

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFrameGolden(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
		want    string // hex of the frame
	}{
		// length 5, CRC-32C("hello") = 0x9a71bb4c little endian, payload.
		{"hello", []byte("hello"), "05" + "4cbb719a" + "68656c6c6f"},
		// length 200 needs a two-byte uvarint; CRC checked with an independent
		// bitwise CRC-32C in Python.
		{"200 zeros", make([]byte, 200), "c801" + "d22767cb" + hex.EncodeToString(make([]byte, 200))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte{0xee}
			got := appendFrame(bytes.Clone(prefix), tt.payload)
			if h := hex.EncodeToString(got[1:]); h != tt.want {
				t.Fatalf("got %s, want %s", h, tt.want)
			}
			if !bytes.Equal(got[:1], prefix) {
				t.Fatal("appendFrame changed the prefix")
			}
			p, n, ok := parseFrame(got[1:])
			if !ok || n != len(got)-1 || !bytes.Equal(p, tt.payload) {
				t.Fatalf("parseFrame: got %x %d %v, want the payload back", p, n, ok)
			}
			if n != frameSize(len(tt.payload)) {
				t.Fatalf("frameSize: got %d, want %d", frameSize(len(tt.payload)), n)
			}
		})
	}
}

func TestParseFrameRejects(t *testing.T) {
	good := appendFrame(nil, []byte("hello"))
	flip := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 1; return b }
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"zero length", []byte{0, 0, 0, 0, 0}},
		{"short header", good[:3]},
		{"short payload", good[:len(good)-1]},
		{"bad checksum", flip(2)},
		{"bad payload", flip(len(good) - 1)},
		{"length over limit", append([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, good...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, ok := parseFrame(tt.b); ok {
				t.Fatalf("got ok for %x, want rejected", tt.b)
			}
		})
	}
}

func TestScanFrames(t *testing.T) {
	var file []byte
	var offs []int64
	for _, p := range []string{"one", "two", "three", "four"} {
		offs = append(offs, int64(len(file)))
		file = appendFrame(file, []byte(p))
	}
	end := int64(len(file))
	type rec struct {
		Off     int64
		Payload string
	}
	tests := []struct {
		name       string
		mutate     func(b []byte) []byte
		want       []rec
		wantDamage [][2]int64
		wantEnd    int64
	}{
		{"clean", func(b []byte) []byte { return b },
			[]rec{{offs[0], "one"}, {offs[1], "two"}, {offs[2], "three"}, {offs[3], "four"}}, nil, end},
		{"damage in the middle", func(b []byte) []byte { b[offs[1]+5] ^= 1; return b },
			[]rec{{offs[0], "one"}, {offs[2], "three"}, {offs[3], "four"}}, [][2]int64{{offs[1], offs[2]}}, end},
		{"torn tail", func(b []byte) []byte { return b[:end-2] },
			[]rec{{offs[0], "one"}, {offs[1], "two"}, {offs[2], "three"}}, nil, offs[3]},
		{"zero tail", func(b []byte) []byte { return append(b, make([]byte, 100)...) },
			[]rec{{offs[0], "one"}, {offs[1], "two"}, {offs[2], "three"}, {offs[3], "four"}}, nil, end},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []rec
			res := scanFrames(tt.mutate(bytes.Clone(file)), func(off int64, _ int, p []byte) {
				got = append(got, rec{off, string(p)})
			})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDamage, res.damage); diff != "" {
				t.Errorf("damage (-want +got):\n%s", diff)
			}
			if res.end != tt.wantEnd {
				t.Errorf("end: got %d, want %d", res.end, tt.wantEnd)
			}
		})
	}
}

// FuzzScanFrames: scanning never panics, every record it reports is a
// valid frame at its offset, records do not overlap, and end is within the
// input.
func FuzzScanFrames(f *testing.F) {
	f.Add(appendFrame(appendFrame(nil, []byte("a")), []byte("bc")))
	f.Add([]byte{5, 0, 0, 0, 0, 1})
	f.Add(make([]byte, 16))
	f.Fuzz(func(t *testing.T, data []byte) {
		last := int64(0)
		res := scanFrames(data, func(off int64, size int, p []byte) {
			if off < last {
				t.Fatalf("record at %d overlaps the one before (ends %d)", off, last)
			}
			q, n, ok := parseFrame(data[off:])
			if !ok || n != size || !bytes.Equal(p, q) {
				t.Fatalf("record at %d is not a valid frame", off)
			}
			last = off + int64(size)
		})
		if res.end > int64(len(data)) || res.end < last {
			t.Fatalf("end %d outside [%d, %d]", res.end, last, len(data))
		}
	})
}
