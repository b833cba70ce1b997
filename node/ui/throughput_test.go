package ui

import (
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// A peer's throughput is the difference of its byte counters over the
// time between two samples; a first sample, a gap over a minute, or
// counters that went back (the agent restarted) measure nothing.
func TestThroughput(t *testing.T) {
	var tp throughput
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	if r := tp.sample(t0, []api.PeerStatus{{ID: "p", BytesReceived: 1000, BytesSent: 10}}); len(r) != 0 {
		t.Fatalf("a first sample measured %v", r)
	}
	r := tp.sample(t0.Add(2*time.Second), []api.PeerStatus{{ID: "p", BytesReceived: 5000, BytesSent: 10}, {ID: "new"}})
	if r["p"] != (peerRate{Received: 2000, Sent: 0}) {
		t.Errorf("p: %+v, want 2,000 B/s received", r["p"])
	}
	if _, ok := r["new"]; ok {
		t.Error("a peer first seen in this sample has a rate")
	}
	if r := tp.sample(t0.Add(3*time.Second), []api.PeerStatus{{ID: "p", BytesReceived: 10}}); len(r) != 0 {
		t.Errorf("counters that went back measured %v", r)
	}
	if r := tp.sample(t0.Add(2*time.Minute), []api.PeerStatus{{ID: "p", BytesReceived: 20}}); len(r) != 0 {
		t.Errorf("a sample two minutes later measured %v", r)
	}
}
