package relay

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	p2pprotocol "github.com/libp2p/go-libp2p/core/protocol"

	"github.com/weftsync/weft/internal/refusal"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// TestRelayStrangerLargeFrames: a stranger's first frame larger than its
// message can be is refused after its length, on every relay protocol,
// and counted.
func TestRelayStrangerLargeFrames(t *testing.T) {
	r := runRelay(t)
	for _, tt := range []struct {
		proto p2pprotocol.ID
		typ   wire.MsgType
		size  int
	}{
		{ProtoLog, wire.MsgHello, wire.MaxFrameSize - 1},
		{ProtoChunk, wire.MsgHello, wire.MaxFrameSize - 1},
		{ProtoRelay, wire.MsgEnroll, wire.MaxEnrollFrame},
	} {
		out := newTestDevice(t)
		out.connect(t, r)
		s, err := out.h.NewStream(context.Background(), r.ID(), tt.proto)
		if err != nil {
			t.Fatal(err)
		}
		_ = s.SetDeadline(time.Now().Add(20 * time.Second))
		werr := wire.WriteFrame(s, tt.typ, bytes.Repeat([]byte{1}, tt.size))
		_, _, rerr := wire.ReadFrame(s, wire.MaxFrameSize)
		if werr == nil && rerr == nil {
			t.Fatalf("%s: a frame of %d bytes was read and answered, want the stream reset", tt.proto, tt.size+1)
		}
		s.Reset()
		waitUntil(t, string(tt.proto)+" refusal counted", func() bool {
			return r.refused.Count(string(tt.proto), refusal.Oversized) == 1
		})
		if !r.bans.Banned(out.h.ID()) {
			t.Fatalf("%s: the stranger is not banned", tt.proto)
		}
		waitUntil(t, "the banned stranger disconnected", func() bool {
			return r.Host().Network().Connectedness(out.h.ID()) != network.Connected
		})
	}
}

// TestRelayOutsiderLearnsTheSame: a vault the relay serves and one it does
// not get the same answer, code and reason, for an outsider.
func TestRelayOutsiderLearnsTheSame(t *testing.T) {
	r := runRelay(t)
	a := newTestDevice(t)
	x := newTestVault(t, a.id)
	x.add(t, a.id, member.Record{Op: member.OpAddRelay, Relay: r.Addrs()[0]})
	a.connect(t, r)
	if got := open(t, a, r, ProtoRelay, enrollFrame(t, x.id, x.encoded())); got.typ != wire.MsgRelayStatus {
		t.Fatalf("enrolling X: got %s %v, want RelayStatus", got.typ, got.err)
	}
	out := newTestDevice(t)
	out.connect(t, r)
	logReq := frame(t, wire.MsgLogRequest, wire.LogRequest{})
	served := open(t, out, r, ProtoLog, hello(t, x.id), logReq)
	unknown := open(t, out, r, ProtoLog, hello(t, keys.VaultID{9}), logReq)
	want := wire.Error{Code: wire.CodeNotMember, Reason: wire.ReasonNotMember}
	if served.typ != wire.MsgError || served.err != want || unknown.typ != wire.MsgError || unknown.err != want {
		t.Fatalf("served vault: %s %v; vault not served: %s %v; want both %v", served.typ, served.err, unknown.typ, unknown.err, want)
	}
	waitUntil(t, "refusals counted", func() bool { return r.refused.Count(string(ProtoLog), refusal.NotMember) == 2 })
}
