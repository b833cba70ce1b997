package simulation

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/protocol/keys"
)

const echoProto = "/sim-test/echo/1"

func testHosts(t *testing.T, n *Network, natted ...bool) []host.Host {
	t.Helper()
	var hs []host.Host
	for _, nat := range natted {
		id, err := keys.GenerateIdentity(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		h, err := n.AddHost(id, nat)
		if err != nil {
			t.Fatal(err)
		}
		h.SetStreamHandler(echoProto, func(s network.Stream) {
			defer s.Close()
			_, _ = io.Copy(s, s)
		})
		hs = append(hs, h)
	}
	t.Cleanup(func() { n.Close() })
	return hs
}

// rtt measures round trips of one small message over a stream from a to b.
func rtt(t *testing.T, a, b host.Host, rounds int) time.Duration {
	t.Helper()
	s, err := a.NewStream(context.Background(), b.ID(), echoProto)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	buf := make([]byte, 8)
	start := time.Now()
	for range rounds {
		if _, err := s.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(s, buf); err != nil {
			t.Fatal(err)
		}
	}
	return time.Since(start) / time.Duration(rounds)
}

func TestLinkLatencyGivesRoundTrip(t *testing.T) {
	n := NewNetwork(LinkProps{})
	hs := testHosts(t, n, false, false)
	const lat = 20 * time.Millisecond
	if err := n.Link(hs[0].ID(), hs[1].ID(), LinkProps{Latency: lat}); err != nil {
		t.Fatal(err)
	}
	got := rtt(t, hs[0], hs[1], 10)
	// Each direction costs one Latency; scheduling adds a little. The
	// bound is generous because the test runs under -race on 2 cores.
	if got < 2*lat || got > 2*lat+60*time.Millisecond {
		t.Fatalf("round trip over a %v link: got %v, want about %v", lat, got, 2*lat)
	}
}

func TestLinkBandwidthCapsThroughput(t *testing.T) {
	n := NewNetwork(LinkProps{})
	hs := testHosts(t, n, false, false)
	const bw = 2 << 20 // 2 MiB/s
	if err := n.Link(hs[0].ID(), hs[1].ID(), LinkProps{Bandwidth: bw}); err != nil {
		t.Fatal(err)
	}
	done := make(chan int64, 1)
	hs[1].SetStreamHandler("/sim-test/sink/1", func(s network.Stream) {
		defer s.Close()
		got, _ := io.Copy(io.Discard, s)
		done <- got
	})
	s, err := hs[0].NewStream(context.Background(), hs[1].ID(), "/sim-test/sink/1")
	if err != nil {
		t.Fatal(err)
	}
	const total = 3 << 20 // 3 MiB: the bucket starts empty, so about 1.5 s
	chunk := make([]byte, 64<<10)
	start := time.Now()
	for sent := 0; sent < total; sent += len(chunk) {
		if _, err := s.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got := <-done
	el := time.Since(start)
	if got != total {
		t.Fatalf("received %d bytes, want %d", got, total)
	}
	rate := float64(total) / el.Seconds()
	if rate > 1.15*bw || rate < 0.5*bw {
		t.Fatalf("throughput over a %d B/s link: got %.0f B/s (%v for %d bytes), want within [0.5, 1.15] x the cap", bw, rate, el, total)
	}
}

func TestPartitionAndHeal(t *testing.T) {
	n := NewNetwork(LinkProps{})
	hs := testHosts(t, n, false, false)
	a, b := hs[0].ID(), hs[1].ID()
	if err := n.LinkDefault(a, b); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := n.Connect(ctx, a, b); err != nil {
		t.Fatalf("connecting linked hosts: %v", err)
	}
	if err := n.Cut(a, b); err != nil {
		t.Fatal(err)
	}
	if n.Connected(a, b) {
		t.Fatal("still connected after Cut")
	}
	for _, dir := range [][2]peer.ID{{a, b}, {b, a}} {
		if err := n.Connect(ctx, dir[0], dir[1]); !errors.Is(err, ErrUnreachable) {
			t.Fatalf("dial across a cut: got %v, want ErrUnreachable", err)
		}
	}
	if _, err := hs[0].NewStream(ctx, b, echoProto); err == nil {
		t.Fatal("opened a stream across a cut")
	}
	if err := n.Heal(a, b); err != nil {
		t.Fatal(err)
	}
	if err := n.Connect(ctx, b, a); err != nil {
		t.Fatalf("dial after Heal: %v", err)
	}
	if got := rtt(t, hs[1], hs[0], 1); got <= 0 {
		t.Fatal("no round trip after Heal")
	}
}

func TestNATOnlyDialsOut(t *testing.T) {
	n := NewNetwork(LinkProps{})
	hs := testHosts(t, n, false, true, true) // public, nat1, nat2
	pub, nat1, nat2 := hs[0].ID(), hs[1].ID(), hs[2].ID()
	for _, p := range [][2]peer.ID{{pub, nat1}, {pub, nat2}, {nat1, nat2}} {
		if err := n.LinkDefault(p[0], p[1]); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	cases := []struct {
		name     string
		from, to peer.ID
		want     bool
	}{
		{"public to NAT", pub, nat1, false},
		{"NAT to NAT", nat1, nat2, false},
		{"NAT to NAT, other way", nat2, nat1, false},
		{"NAT to public", nat1, pub, true},
	}
	var reached int
	for _, c := range cases {
		err := n.Connect(ctx, c.from, c.to)
		if got := err == nil; got != c.want {
			t.Errorf("%s: got reachable=%v (%v), want %v", c.name, got, err, c.want)
		}
		if err == nil {
			reached++
		}
	}
	if reached != 1 {
		t.Fatalf("got %d reachable pairs, want 1", reached)
	}
	// Once the NAT'ed host dialed out, the public one can open streams
	// back over that connection.
	if got := rtt(t, hs[0], hs[1], 1); got <= 0 {
		t.Fatal("no round trip back over the NAT'ed host's connection")
	}
}
