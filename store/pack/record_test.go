package pack

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/weftsync/weft/store/chunkrec"
	"lukechampine.com/blake3"
)

// TestRecordGolden pins the record format byte for byte (docs/storage.md).
func TestRecordGolden(t *testing.T) {
	data := []byte("weft")
	c := chunkCID(t, data)
	prefix := []byte{0xaa}
	rec := chunkrec.AppendHeader(bytes.Clone(prefix), c.Bytes(), data)
	rec = append(rec, data...)
	const want = "aa" + // prefix, proving append semantics
		"77706b31" + // magic "wpk1"
		"078c26d7" + // CRC-32C of the rest (checked with an independent bitwise CRC-32C)
		"0024" + // CID length 36
		"00000004" + // chunk length 4
		"01551e20" + // CIDv1, raw, BLAKE3, 32 bytes
		"907edfae0396f9bcc1bfc08d8a49617efd708d6714c7f3a1a860dbf704474bb7" + // BLAKE3-256("weft"), checked below
		"77656674" // "weft"
	if d := blake3.Sum256(data); hex.EncodeToString(d[:]) != want[2+28+8:2+28+8+64] {
		t.Fatalf("BLAKE3(%q) = %x, not the digest in the golden record", data, d)
	}
	if got := hex.EncodeToString(rec); got != want {
		t.Errorf("record:\ngot  %s\nwant %s", got, want)
	}
	gotCID, gotData, err := chunkrec.Parse(rec[len(prefix):])
	if err != nil || !bytes.Equal(gotCID, c.Bytes()) || !bytes.Equal(gotData, data) {
		t.Errorf("parseRecord: got %x, %q, %v; want %x, %q, nil", gotCID, gotData, err, c.Bytes(), data)
	}
}

func TestParseRecordRejects(t *testing.T) {
	data := []byte("some chunk bytes")
	c := chunkCID(t, data)
	good := append(chunkrec.AppendHeader(nil, c.Bytes(), data), data...)
	tests := []struct {
		name string
		rec  []byte
	}{
		{"empty", nil},
		{"short header", good[:10]},
		{"torn", good[:len(good)-1]},
		{"trailing byte", append(bytes.Clone(good), 0)},
		{"bad magic", flip(good, 1)},
		{"bad crc", flip(good, 6)},
		{"bad cid length", flip(good, 9)},
		{"bad data length", flip(good, 13)},
		{"bad cid", flip(good, 16)},
		{"bad data", flip(good, len(good)-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := chunkrec.Parse(tt.rec); err == nil {
				t.Errorf("got nil error, want chunkrec.ErrBadRecord")
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	b = bytes.Clone(b)
	b[i] ^= 1
	return b
}

// FuzzParseRecord: parsing never panics, and whatever parses re-encodes to
// the same bytes.
func FuzzParseRecord(f *testing.F) {
	data := []byte("weft")
	c := chunkCID(f, data)
	f.Add(append(chunkrec.AppendHeader(nil, c.Bytes(), data), data...))
	f.Add([]byte("wpk1"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, rec []byte) {
		cb, d, err := chunkrec.Parse(rec)
		if err != nil {
			return
		}
		again := append(chunkrec.AppendHeader(nil, cb, d), d...)
		if !bytes.Equal(again, rec) {
			t.Errorf("round trip: got %x, want %x", again, rec)
		}
	})
}

// FuzzScanPack: scanning any bytes as a pack never panics, reports only
// records that parse, in order and without overlap, and ends within the
// file.
func FuzzScanPack(f *testing.F) {
	data := []byte("weft")
	c := chunkCID(f, data)
	rec := append(chunkrec.AppendHeader(nil, c.Bytes(), data), data...)
	f.Add(append(bytes.Clone(rec), rec...))
	f.Add(append(append(bytes.Clone(rec), "junk"...), rec...))
	f.Add(append(bytes.Clone(rec), rec[:20]...))
	f.Fuzz(func(t *testing.T, pack []byte) {
		var last int64 = -1
		end, err := chunkrec.Scan(bytes.NewReader(pack), 0, int64(len(pack)), func(off int64, cb, d []byte) error {
			if off <= last {
				t.Fatalf("record at %d after one at %d", off, last)
			}
			last = off
			n := chunkrec.Size(len(cb), len(d))
			if _, _, err := chunkrec.Parse(pack[off : off+n]); err != nil {
				t.Fatalf("reported record at %d does not parse: %v", off, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if end < 0 || end > int64(len(pack)) {
			t.Fatalf("end %d outside [0, %d]", end, len(pack))
		}
	})
}
