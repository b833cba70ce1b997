package connect

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
)

func TestParseRelays(t *testing.T) {
	const id1 = "12D3KooWJJ89u7XHLtGGu1ssMtKxd9Sd1c8TrqV83dq4695sqqfs"
	const id2 = "12D3KooWGhLCDoMnwR7bN9syBF9nyrKtTYBwR2mVAaMVYzWWbMSY"
	tests := []struct {
		name    string
		in      []string
		want    map[string]int // relay ID -> number of addresses
		wantErr bool
	}{
		{"none", nil, map[string]int{}, false},
		{"one", []string{"/ip4/1.2.0.1/udp/8000/quic-v1/p2p/" + id1}, map[string]int{id1: 1}, false},
		{"merged by ID", []string{"/ip4/1.2.0.1/udp/8000/quic-v1/p2p/" + id1, "/ip4/1.2.0.1/tcp/8000/p2p/" + id1,
			"/ip4/1.2.0.2/tcp/1/p2p/" + id2}, map[string]int{id1: 2, id2: 1}, false},
		{"no peer ID", []string{"/ip4/1.2.0.1/tcp/8000"}, nil, true},
		{"garbage", []string{"relay.example"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			infos, err := ParseRelays(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			got := map[string]int{}
			for _, i := range infos {
				got[i.ID.String()] = len(i.Addrs)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("relays (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCircuitAddrs(t *testing.T) {
	const id = "12D3KooWJJ89u7XHLtGGu1ssMtKxd9Sd1c8TrqV83dq4695sqqfs"
	infos, err := ParseRelays([]string{"/ip4/1.2.0.1/udp/8000/quic-v1/p2p/" + id, "/ip4/1.2.0.1/tcp/8000/p2p/" + id})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range circuitAddrs(infos) {
		got = append(got, a.String())
	}
	want := []string{
		"/ip4/1.2.0.1/udp/8000/quic-v1/p2p/" + id + "/p2p-circuit",
		"/ip4/1.2.0.1/tcp/8000/p2p/" + id + "/p2p-circuit",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("circuit addresses (-want +got):\n%s", diff)
	}
}

// TestPunchTracer checks that only a successful EndHolePunch reaches the
// node, and that a nil tracer is inert.
func TestPunchTracer(t *testing.T) {
	const remote = peer.ID("remote")
	tests := []struct {
		name string
		evt  holepunch.Event
		want []peer.ID
	}{
		{"success", holepunch.Event{Remote: remote, Type: holepunch.EndHolePunchEvtT, Evt: &holepunch.EndHolePunchEvt{Success: true}}, []peer.ID{remote}},
		{"failure", holepunch.Event{Remote: remote, Type: holepunch.EndHolePunchEvtT, Evt: &holepunch.EndHolePunchEvt{Error: "timeout"}}, nil},
		{"direct dial", holepunch.Event{Remote: remote, Type: holepunch.DirectDialEvtT, Evt: &holepunch.DirectDialEvt{Success: true}}, nil},
		{"start", holepunch.Event{Remote: remote, Type: holepunch.StartHolePunchEvtT, Evt: &holepunch.StartHolePunchEvt{}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewPunchTracer()
			var got []peer.ID
			tr.SetOnSuccess(func(p peer.ID) { got = append(got, p) })
			tr.Trace(&tt.evt)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("punches reported (-want +got):\n%s", diff)
			}
		})
	}
	var none *PunchTracer
	none.Trace(&tests[0].evt)
	none.Mark("c1")
	if none.Punched("c1") {
		t.Errorf("got a punched connection from a nil tracer, want none")
	}
	tr := NewPunchTracer()
	tr.Mark("c1")
	if !tr.Punched("c1") || tr.Punched("c2") {
		t.Errorf("got punched(c1)=%v punched(c2)=%v, want true, false", tr.Punched("c1"), tr.Punched("c2"))
	}
	tr.Forget("c1")
	if tr.Punched("c1") {
		t.Errorf("got c1 punched after forget, want not")
	}
}
