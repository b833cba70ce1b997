package doctor

import (
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

func TestClockSkewFindings(t *testing.T) {
	ms := func(d time.Duration) *int64 { m := d.Milliseconds(); return &m }
	errMs := func(f float64) *float64 { return &f }
	// measured is a peer's diagnosis and this device's clock correction.
	type measured struct {
		api.PeerDiagnosis
		corr time.Duration
	}
	peer := func(skew, corr time.Duration, bound float64) measured {
		return measured{api.PeerDiagnosis{ID: "12D3KooWPeer", ClockSkewMillis: ms(skew), ClockErrorMillis: errMs(bound)}, corr}
	}
	tests := []struct {
		name   string
		p      measured
		warn   bool
		fixHas string
		msgHas string
		fixNot string
	}{
		{"unmeasured", measured{PeerDiagnosis: api.PeerDiagnosis{ID: "x"}}, false, "", "", ""},
		{"agents on one machine", peer(3*time.Millisecond, 0, 0.2), false, "", "", ""},
		{"59 s is under the limit", peer(59*time.Second, 0, 1), false, "", "", ""},
		{"61 s but not beyond the error", peer(61*time.Second, 0, 2000), false, "", "", ""},
		{"peer 48 h ahead, the others agree with this device", peer(48*time.Hour, time.Millisecond, 1), true, "set the clock on laptop", "ahead of", "this device's clock"},
		{"peer 48 h behind", peer(-48*time.Hour, 0, 1), true, "set the clock on laptop", "behind", ""},
		{"this device is the odd one out", peer(48*time.Hour, 48*time.Hour, 1), true, "set this device's clock", "wrong one", ""},
		{"two devices, no majority", peer(96*time.Hour, 48*time.Hour, 1), true, "whichever", "96h0m0s ahead", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := clockSkewFindings(tt.p.PeerDiagnosis, tt.p.corr, "laptop")
			if !tt.warn {
				if len(got) != 0 {
					t.Fatalf("got %v, want no finding", got)
				}
				return
			}
			if len(got) != 1 || got[0].Kind != "clock-skew" || got[0].Severity != api.SeverityWarning {
				t.Fatalf("got %v, want one clock-skew warning", got)
			}
			f := got[0]
			if !strings.Contains(f.Fix, tt.fixHas) || !strings.Contains(f.Fix, "NTP") {
				t.Errorf("fix %q, want it to contain %q and NTP", f.Fix, tt.fixHas)
			}
			if tt.fixNot != "" && strings.Contains(f.Fix, tt.fixNot) {
				t.Errorf("fix %q, want no %q", f.Fix, tt.fixNot)
			}
			if !strings.Contains(f.Message, tt.msgHas) {
				t.Errorf("message %q, want it to contain %q", f.Message, tt.msgHas)
			}
		})
	}
}
