package member

import (
	"testing"

	"github.com/weftsync/weft/protocol/keys"
)

func TestPeekSeq(t *testing.T) {
	admin := must(keys.GenerateIdentity(seeded(1)))
	g := Genesis(admin, vaultKey, 1)
	big := g
	big.Seq = 1 << 40 // an 8-byte argument
	mid := g
	mid.Seq = 300 // a 2-byte argument
	tests := []struct {
		name   string
		in     []byte
		want   uint64
		wantOK bool
	}{
		{"genesis", g.Encode(), 1, true},
		{"two-byte seq", mid.Encode(), 300, true},
		{"eight-byte seq", big.Encode(), 1 << 40, true},
		{"empty", nil, 0, false},
		{"not an array", []byte{0x01}, 0, false},
		{"array of nothing", []byte{0x80}, 0, false},
		{"vault too short", []byte{0x83, 0x01, 0x58, 0x20, 0x00}, 0, false},
		{"seq not unsigned", []byte{0x83, 0x01, 0x41, 0x00, 0x20}, 0, false},
		{"truncated seq", []byte{0x83, 0x01, 0x41, 0x00, 0x19, 0x01}, 0, false},
		{"indefinite", []byte{0x9f}, 0, false},
	}
	for _, r := range revokedFixtureRecords() {
		tests = append(tests, struct {
			name   string
			in     []byte
			want   uint64
			wantOK bool
		}{r.Op.String(), r.Encode(), r.Seq, true})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := PeekSeq(tt.in)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("got %d %v, want %d %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// FuzzPeekSeq checks that PeekSeq never panics and agrees with Decode on
// every record Decode accepts.
func FuzzPeekSeq(f *testing.F) {
	admin := must(keys.GenerateIdentity(seeded(1)))
	f.Add(Genesis(admin, vaultKey, 1).Encode())
	f.Add([]byte{0x80})
	for _, r := range revokedFixtureRecords() {
		f.Add(r.Encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		seq, ok := PeekSeq(b)
		r, err := Decode(b)
		if err != nil {
			return
		}
		if !ok || seq != r.Seq {
			t.Fatalf("PeekSeq got %d %v, Decode says %d", seq, ok, r.Seq)
		}
	})
}
