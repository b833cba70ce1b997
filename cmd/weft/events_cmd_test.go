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
