package main

import (
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

func TestFormatEvent(t *testing.T) {
	at := time.Date(2026, 11, 30, 6, 10, 2, 5e6, time.Local)
	tests := []struct {
		ev   api.Event
		want string
	}{
		{api.Event{Time: at, Type: api.EventApplied, Folder: "/f", Path: "a.md", Kind: "file", Bytes: 12}, "06:10:02.005 file-applied      a.md kind=file bytes=12"},
		{api.Event{Time: at, Type: api.EventPeerConnected, Peer: "12D3KooWX", Kind: "lan"}, "06:10:02.005 peer-connected    peer 12D3KooWX kind=lan"},
		{api.Event{Time: at, Type: api.EventEntrySafe, Folder: "/f", Peer: "P", Seq: 4, Count: 2}, "06:10:02.005 entry-safe        peer P count=2 seq=4"},
		{api.Event{Time: at, Type: api.EventError, Folder: "/f", Path: "x", Error: "no space"}, `06:10:02.005 error             x error="no space"`},
		{api.Event{Time: at, Type: api.EventScanned, Folder: "/f"}, "06:10:02.005 scanned           /f"},
	}
	for _, tt := range tests {
		if got := formatEvent(tt.ev); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

func TestReadSSE(t *testing.T) {
	stream := "event: scanned\ndata: {\"time\":\"2026-11-30T06:10:02Z\",\"type\":\"scanned\",\"count\":3}\n\n" +
		": a comment\n\nevent: error\ndata: {\"time\":\"2026-11-30T06:10:03Z\",\"type\":\"error\",\"path\":\"a\"}\n\n"
	var got []string
	err := readSSE(strings.NewReader(stream), func(ev api.Event, raw []byte) error {
		got = append(got, string(ev.Type)+":"+ev.Path)
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "agent stopped") {
		t.Fatalf("end of stream: got %v, want an error saying the agent stopped", err)
	}
	if strings.Join(got, ",") != "scanned:,error:a" {
		t.Fatalf("got %v, want scanned then error at a", got)
	}
}

// TestProgressRate: the rates are over the last samples within the
// window, and the time left follows the item rate.
func TestProgressRate(t *testing.T) {
	var r progressRate
	t0 := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	if got := r.line(10); got != "measuring the rate" {
		t.Errorf("no samples: %q", got)
	}
	r.sample(t0, 0, 0)
	r.sample(t0.Add(2*time.Second), 20, 2<<20)
	if got := r.line(100); got != "10 items/s, 1.0 MiB/s received, about 10s left" {
		t.Errorf("two samples: %q", got)
	}
	for i := 3; i <= 30; i++ {
		r.sample(t0.Add(time.Duration(i)*time.Second), 20+i, 2<<20)
	}
	if items, _, _ := r.perSecond(); items < 0.9 || items > 1.1 {
		t.Errorf("after the burst left the window: %.2f items/s, want about 1", items)
	}
	r = progressRate{}
	r.sample(t0, 5, 0)
	r.sample(t0.Add(time.Second), 5, 0)
	if got := r.line(3); got != "0 items/s, 0 B/s received, time left unknown" {
		t.Errorf("stalled: %q", got)
	}
}
