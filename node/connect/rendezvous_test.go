package connect

import (
	"fmt"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
)

func TestRendezvousName(t *testing.T) {
	var key [32]byte
	for i := range key {
		key[i] = byte(i)
	}
	tests := []struct {
		name   string
		key    [32]byte
		window int64
		want   string
	}{
		// Golden: HKDF-SHA256(key 00..1f, no salt, info "weft/v1
		// rendezvous-window window=20000"), SHA-256, CIDv1 raw, base32;
		// computed independently with Python's hmac and hashlib.
		{"day 20000", key, 20000, "bafkreifrvijx5ftkjmpozlrtxlmwxwpxlisf5yv4uw5d3jbvzexfbnmohm"},
		{"day 20001", key, 20001, "bafkreig6ekqxvlscbajojj2u3mqxesev54deatsiavmh7afcj352tl2bre"},
		{"zero key", [32]byte{}, 20000, "bafkreibeph3akei7ebhl6ykleufajqjxksuqezozkdm3ygnpdtg32vzdfm"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := RendezvousName(tt.key, tt.window)
			if got := c.String(); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if c.Prefix().Codec != cid.Raw || c.Prefix().Version != 1 {
				t.Errorf("got prefix %+v, want CIDv1 raw", c.Prefix())
			}
			if other, dup := seen[c.String()]; dup {
				t.Errorf("same name as %q", other)
			}
			seen[c.String()] = tt.name
		})
	}
}

func TestRendezvousWindows(t *testing.T) {
	day := func(d int64, hms string) time.Time {
		base := time.Unix(d*86400, 0).UTC()
		off, err := time.ParseDuration(hms)
		if err != nil {
			t.Fatal(err)
		}
		return base.Add(off)
	}
	tests := []struct {
		name string
		now  time.Time
		want []int64
	}{
		{"midday", day(20000, "12h"), []int64{20000}},
		{"just after midnight", day(20000, "10m"), []int64{20000, 19999}},
		{"at midnight", day(20000, "0s"), []int64{20000, 19999}},
		{"an hour after midnight", day(20000, "1h"), []int64{20000}},
		{"an hour before midnight", day(20000, "23h"), []int64{20000, 20001}},
		{"just before midnight", day(20000, "23h59m59s"), []int64{20000, 20001}},
		{"other time zone, same instant", day(20000, "12h").In(time.FixedZone("X", 11*3600)), []int64{20000}},
		{"before 1970", day(-1, "12h"), []int64{-1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RendezvousWindows(tt.now)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
