package node

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	p2pprotocol "github.com/libp2p/go-libp2p/core/protocol"

	"github.com/weftsync/weft/internal/refusal"
	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// waitRefused polls until n counted want refusals of proto for reason.
func waitRefused(t *testing.T, n *Node, proto p2pprotocol.ID, reason string, want uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for n.strangers.refused.Count(string(proto), reason) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s %s: counted %d refusals, want %d", proto, reason, n.strangers.refused.Count(string(proto), reason), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStrangerLargeFirstFrame: an outsider's 8 MiB first frame on each
// protocol is refused after its length, the stream reset, the refusal
// counted, and no peer state is made for the stranger.
func TestStrangerLargeFirstFrame(t *testing.T) {
	n, _ := testNode(t)
	payload := bytes.Repeat([]byte{0xa5}, wire.MaxFrameSize-1)
	for _, tt := range []struct {
		proto p2pprotocol.ID
		typ   wire.MsgType
	}{
		{ProtoLog, wire.MsgHello},
		{ProtoChunk, wire.MsgHello},
		{ProtoPair, wire.MsgPairRequest},
	} {
		h, id := outsiderHost(t)
		connectHost(t, h, n)
		s, err := h.NewStream(context.Background(), n.host.ID(), tt.proto)
		if err != nil {
			t.Fatal(err)
		}
		_ = s.SetDeadline(time.Now().Add(20 * time.Second))
		werr := wire.WriteFrame(s, tt.typ, payload)
		_, _, rerr := wire.ReadFrame(s, wire.MaxFrameSize)
		if werr == nil && rerr == nil {
			t.Fatalf("%s: the 8 MiB frame was taken and answered, want the stream reset", tt.proto)
		}
		if errors.Is(rerr, context.DeadlineExceeded) || strings.Contains(rerr.Error(), "deadline") {
			t.Fatalf("%s: no answer before the deadline, want a reset: %v", tt.proto, rerr)
		}
		s.Reset()
		waitRefused(t, n, tt.proto, refusal.Oversized, 1)
		n.mu.Lock()
		_, known := n.peers[id.ID()]
		n.mu.Unlock()
		if known {
			t.Fatalf("%s: the stranger got peer state, want none", tt.proto)
		}
		// Banned: disconnected, and its next connection refused.
		if !n.strangers.bans.Banned(h.ID()) {
			t.Fatalf("%s: the stranger is not banned", tt.proto)
		}
		deadline := time.Now().Add(10 * time.Second)
		for h.Network().Connectedness(n.host.ID()) == network.Connected {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the stranger is still connected 10 s after the refusal", tt.proto)
			}
			time.Sleep(5 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		h.Peerstore().AddAddrs(n.host.ID(), n.host.Addrs(), time.Minute)
		_, err = h.NewStream(ctx, n.host.ID(), ProtoPair)
		cancel()
		if err == nil && h.Network().Connectedness(n.host.ID()) == network.Connected {
			// The handshake may complete on the dialler's side before
			// the gater's refusal closes it: wait for that.
			for h.Network().Connectedness(n.host.ID()) == network.Connected {
				if time.Now().After(deadline) {
					t.Fatalf("%s: the banned stranger connected again", tt.proto)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	mt := n.newMetrics()
	if got := refusedMetric(t, mt, string(ProtoPair), refusal.Oversized); got != 1 {
		t.Fatalf("weft_refused_streams_total{pair,oversized} = %v, want 1", got)
	}
}

// refusedMetric gathers weft_refused_streams_total{protocol,reason} from mt.
func refusedMetric(t *testing.T, mt *api.Metrics, proto, reason string) float64 {
	t.Helper()
	fams, err := mt.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "weft_refused_streams_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["protocol"] == proto && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no weft_refused_streams_total{protocol=%q,reason=%q}", proto, reason)
	return 0
}

// helloAnswer opens proto on n from h, sends a Hello for vault and returns
// the Error answered.
func helloAnswer(t *testing.T, h host.Host, n *Node, proto p2pprotocol.ID, vault keys.VaultID) wire.Error {
	t.Helper()
	s, err := h.NewStream(context.Background(), n.host.ID(), proto)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := wire.WriteFrame(s, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: vault}.AppendBinary(nil)); err != nil {
		t.Fatal(err)
	}
	_ = s.SetReadDeadline(time.Now().Add(10 * time.Second))
	mt, p, err := wire.ReadFrame(s, wire.MaxFrameSize)
	if err != nil || mt != wire.MsgError {
		t.Fatalf("%s: got %s, %v; want an Error", proto, mt, err)
	}
	e, err := wire.ParseError(p)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestOutsiderLearnsTheSame: a vault served here and one that is not get
// the same answer, code and reason, from a device, and the same as a
// device that serves no vault the outsider names.
func TestOutsiderLearnsTheSame(t *testing.T) {
	n, _ := testNode(t)
	other, _ := testNode(t)
	h, _ := outsiderHost(t)
	connectHost(t, h, n)
	connectHost(t, h, other)
	served := n.vaultsNow()[0].id
	want := wire.Error{Code: wire.CodeNotMember, Reason: wire.ReasonNotMember}
	for _, proto := range []p2pprotocol.ID{ProtoLog, ProtoChunk} {
		for _, tt := range []struct {
			name  string
			n     *Node
			vault keys.VaultID
		}{
			{"served", n, served},
			{"not served", n, keys.VaultID{9}},
			{"served by another device only", other, served},
		} {
			if got := helloAnswer(t, h, tt.n, proto, tt.vault); got != want {
				t.Errorf("%s, %s: got %v, want %v", proto, tt.name, got, want)
			}
		}
	}
	waitRefused(t, n, ProtoLog, refusal.NotMember, 2)
}

// TestPairingRateLimited: one identity gets refusal.AttemptsPerPeerBurst attempts,
// then is told to wait; another identity still gets its own.
func TestPairingRateLimited(t *testing.T) {
	n, _ := testNode(t)
	attempt := func(h host.Host) wire.Error {
		s, err := h.NewStream(context.Background(), n.host.ID(), ProtoPair)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := wire.WriteFrame(s, wire.MsgPairRequest, wire.PairRequest{Proof: bytes.Repeat([]byte{1}, 32)}.AppendBinary(nil)); err != nil {
			t.Fatal(err)
		}
		_ = s.SetReadDeadline(time.Now().Add(10 * time.Second))
		mt, p, err := wire.ReadFrame(s, wire.MaxFrameSize)
		if err != nil || mt != wire.MsgError {
			t.Fatalf("got %s, %v; want an Error", mt, err)
		}
		e, _ := wire.ParseError(p)
		return e
	}
	h1, _ := outsiderHost(t)
	connectHost(t, h1, n)
	for i := 0; i < refusal.AttemptsPerPeerBurst; i++ {
		if got := attempt(h1); got.Code != wire.CodeInviteInvalid {
			t.Fatalf("attempt %d: got %v, want code %d (a wrong code)", i+1, got, wire.CodeInviteInvalid)
		}
	}
	if got := attempt(h1); got.Code != wire.CodeRateLimited {
		t.Fatalf("attempt %d: got %v, want code %d", refusal.AttemptsPerPeerBurst+1, got, wire.CodeRateLimited)
	}
	h2, _ := outsiderHost(t)
	connectHost(t, h2, n)
	if got := attempt(h2); got.Code != wire.CodeInviteInvalid {
		t.Fatalf("another identity: got %v, want code %d", got, wire.CodeInviteInvalid)
	}
	waitRefused(t, n, ProtoPair, refusal.RateLimited, 1)
	waitRefused(t, n, ProtoPair, refusal.BadInvite, refusal.AttemptsPerPeerBurst+1)
}
