package relay

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// TestRelayPullSendsMemberSeq: the relay's LogRequest carries the
// sequence of the last membership record its replica holds, so a device
// answering as devices do sends each record once, not on every pull. The
// admin enrolls the first two records of a three-record log; the first
// pull asks for what follows record 2 and gets record 3, the second asks
// for what follows 3 and gets nothing.
func TestRelayPullSendsMemberSeq(t *testing.T) {
	r := runRelay(t)
	a := newTestDevice(t)
	x := newTestVault(t, a.id)
	x.add(t, a.id, member.Record{Op: member.OpAddRelay, Relay: r.Addrs()[0]})
	enrolled := x.encoded()
	m := newTestDevice(t)
	x.add(t, a.id, member.Record{Op: member.OpAdd, Device: m.id.ID(), Role: member.RoleMember})
	full := slices.Clone(x.state.Records())
	pulls := answerPulls(t, a, x.id, func() []member.Record { return full }, nil)
	a.connect(t, r)
	if got := open(t, a, r, ProtoRelay, enrollFrame(t, x.id, enrolled)); got.typ != wire.MsgRelayStatus {
		t.Fatalf("enrolling X: got %s %v, want RelayStatus", got.typ, got.err)
	}

	var got []pulled
	for range 2 {
		p := nextPull(t, pulls)
		p.req.Vector = nil // no entries here: only the membership counts
		got = append(got, p)
	}
	want := []pulled{
		{req: wire.LogRequest{MemberSeq: 2}, members: 1},
		{req: wire.LogRequest{MemberSeq: 3}, members: 0},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(pulled{})); diff != "" {
		t.Fatalf("the relay's pulls (-want +got):\n%s", diff)
	}
	if !r.replica(x.id).isMember(m.id.ID()) {
		t.Fatal("the relay did not take record 3 from its pull")
	}
}

// TestRelayServesMembershipAfterMemberSeq: a device's LogRequest with
// MemberSeq n gets from the relay only the membership records after n, as
// from a device (node/logproto.go, serveLog), and the relay's LogStatus
// carries its own membership sequence.
func TestRelayServesMembershipAfterMemberSeq(t *testing.T) {
	r := runRelay(t)
	a := newTestDevice(t)
	x := newTestVault(t, a.id)
	x.add(t, a.id, member.Record{Op: member.OpAddRelay, Relay: r.Addrs()[0]})
	x.add(t, a.id, member.Record{Op: member.OpAdd, Device: newTestDevice(t).id.ID(), Role: member.RoleMember})
	a.connect(t, r)
	if got := open(t, a, r, ProtoRelay, enrollFrame(t, x.id, x.encoded())); got.typ != wire.MsgRelayStatus {
		t.Fatalf("enrolling X: got %s %v, want RelayStatus", got.typ, got.err)
	}
	tests := []struct {
		name      string
		memberSeq uint64
		want      []uint64
	}{
		{"no record held", 0, []uint64{1, 2, 3}},
		{"the first two held", 2, []uint64{3}},
		{"all held", 3, nil},
		{"more claimed than the relay holds", 9, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readLog(t, a, r, x.id, wire.LogRequest{MemberSeq: tt.memberSeq})
			if !slices.Equal(got.members, tt.want) {
				t.Errorf("membership records served: got %v, want %v", got.members, tt.want)
			}
			if got.status.MemberSeq != 3 {
				t.Errorf("LogStatus member seq: got %d, want 3", got.status.MemberSeq)
			}
		})
	}
}
