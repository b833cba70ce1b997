package bench

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMetrics(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]float64
	}{
		{"labels summed", `# HELP weft_relay_vault_bytes_stored Encrypted chunk bytes stored for a vault.
# TYPE weft_relay_vault_bytes_stored gauge
weft_relay_vault_bytes_stored{vault="v1"} 1.048576e+06
weft_relay_vault_bytes_stored{vault="v2"} 10
weft_relay_bytes_received_total 123
`, map[string]float64{"weft_relay_vault_bytes_stored": 1048586, "weft_relay_bytes_received_total": 123}},
		{"label with a brace and a timestamp", `x{a="}{"} 2 1700000000000` + "\n", map[string]float64{"x": 2}},
		{"kind summed apart", `weft_relay_vault_object_requests_total{vault="v1",kind="put"} 3
weft_relay_vault_object_requests_total{kind="put",vault="v2"} 2
weft_relay_vault_object_requests_total{vault="v1",kind="get"} 7
`, map[string]float64{"weft_relay_vault_object_requests_total": 12,
			`weft_relay_vault_object_requests_total{kind="put"}`: 5, `weft_relay_vault_object_requests_total{kind="get"}`: 7}},
		{"empty", "", map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMetrics(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("metrics (-want +got):\n%s", d)
			}
		})
	}
	if _, err := parseMetrics(strings.NewReader("x{a=\"b\" 1\n")); err == nil {
		t.Errorf("unterminated labels: got no error, want one")
	}
	if _, err := parseMetrics(strings.NewReader("x notanumber\n")); err == nil {
		t.Errorf("bad value: got no error, want one")
	}
}

func TestParseReady(t *testing.T) {
	tests := []struct {
		line, addr, metrics string
		ok                  bool
	}{
		{"ready relay=12D3 listen=/ip4/127.0.0.1/tcp/4001/p2p/12D3,/ip4/127.0.0.1/udp/4001/quic-v1/p2p/12D3 metrics=http://127.0.0.1:9100/metrics",
			"/ip4/127.0.0.1/tcp/4001/p2p/12D3", "http://127.0.0.1:9100/metrics", true},
		{"ready relay=12D3 listen=/ip4/127.0.0.1/tcp/4001/p2p/12D3", "", "", false},
	}
	for _, tt := range tests {
		r := &relayProc{}
		err := r.parseReady(tt.line)
		if (err == nil) != tt.ok {
			t.Errorf("parseReady(%q): got err %v, want ok %v", tt.line, err, tt.ok)
			continue
		}
		if tt.ok && (r.addr != tt.addr || r.metrics != tt.metrics) {
			t.Errorf("parseReady(%q): got %q %q, want %q %q", tt.line, r.addr, r.metrics, tt.addr, tt.metrics)
		}
	}
}

// FuzzParseMetrics: any scrape body yields sums or an error, never a
// panic.
func FuzzParseMetrics(f *testing.F) {
	f.Add("weft_relay_vault_bytes_stored{vault=\"v\"} 1e6\n# HELP x y\nx 2\n")
	f.Add("x{a=\"}\"} 1 2\n")
	f.Add("x{\n")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = parseMetrics(strings.NewReader(s))
	})
}
