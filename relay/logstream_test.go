package relay

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
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

// TestRelayServesRevokedLogUpToItsRevocation: a member writes three
// entries and the relay stores them; the admin then revokes it keeping
// only the first (the revocation's upto is 1). The relay serves that
// member's log only up to entry 1, as a device does (node/epochs.go,
// acceptedSeq): every device refuses entries 2 and 3 and would end the
// stream on them. What it asks with and what it reports stay at the
// stored head, 3: its pull names what it holds, so a device that has not
// learned of the revocation is not asked for entries 2 and 3 (which the
// relay would refuse), and its LogStatus must not go back on what devices
// were told (node/rollback.go would report a rollback).
func TestRelayServesRevokedLogUpToItsRevocation(t *testing.T) {
	lab := newMemberLab(t) // m never connects: its entries reach the relay below
	r, a, m, x, rep, pulls, release := lab.r, lab.a, lab.m, lab.x, lab.rep, lab.pulls, lab.release
	var prev entry.Head
	for i := range 3 {
		data := fmt.Appendf(nil, "note %d", i+1) // inline: held once stored
		e, err := entry.New(entry.Config{Identity: m.id, Vault: x.id, Prev: prev, Clock: uint64(i + 1), Keys: x.ek,
			Time: int64(i + 1), Rand: rand.Reader},
			&entry.Body{Versions: []entry.Version{{Path: fmt.Sprintf("note-%d.txt", i+1), Kind: entry.KindFile, Mode: 0o644,
				MTime: 1, Size: uint64(len(data)), Hash: blake3.Sum256(data), Inline: data}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.ingestEntry(e.Bytes()); err != nil {
			t.Fatalf("storing entry %d of the member: %v", i+1, err)
		}
		prev = e.Head()
	}
	idM := m.id.ID()
	if got := rep.heldVector()[idM]; got != 3 {
		t.Fatalf("the relay holds the member's log up to %d, want 3", got)
	}

	var next keys.EpochSecret
	if _, err := rand.Read(next[:]); err != nil {
		t.Fatal(err)
	}
	sealed, err := keys.SealEpochSecret(rand.Reader, a.id.ID(), x.id, 1, next)
	if err != nil {
		t.Fatal(err)
	}
	x.add(t, a.id, member.Record{Op: member.OpRevoke, Device: idM, Epoch: 1, Upto: 1,
		Keys: []member.SealedKey{{Device: a.id.ID(), Sealed: sealed}}})
	if got := open(t, a, r, ProtoRelay, enrollFrame(t, x.id, x.encoded())); got.typ != wire.MsgRelayStatus {
		t.Fatalf("bringing the revocation: got %s %v, want RelayStatus", got.typ, got.err)
	}

	got := readLog(t, a, r, x.id, wire.LogRequest{MemberSeq: 4})
	var seqs []uint64
	for _, e := range got.entries {
		if e.Author() == idM {
			seqs = append(seqs, e.Seq())
		}
	}
	if !slices.Equal(seqs, []uint64{1}) {
		t.Errorf("the revoked member's entries served: got %v, want [1] (its revocation keeps entries up to 1)", seqs)
	}
	if held := wire.VectorMap(got.status.Vector)[idM]; held != 3 {
		t.Errorf("LogStatus for the revoked member: got %d, want 3, what the relay reported before", held)
	}

	close(release) // the relay pulls again
	p := nextPull(t, pulls)
	if p.req.MemberSeq != 4 {
		t.Fatalf("the relay's pull after the revocation: member seq %d, want 4", p.req.MemberSeq)
	}
	if asked := wire.VectorMap(p.req.Vector)[idM]; asked != 3 {
		t.Errorf("the relay's pull after the revocation names the revoked member's log at %d, want its stored head 3", asked)
	}
}

// TestRunWaitsForItsPullers: a log puller runs on a goroutine Run owns, so
// when Run returns no puller is left running (its stream, held open by the
// device, is reset), and goRun starts nothing more. (The first check is a
// regression check: a puller ends quickly once its stream is reset, so
// Run's other waits may cover a missing one. The second fails without the
// stopping mark.)
func TestRunWaitsForItsPullers(t *testing.T) {
	r, stop := startRelay(t, t.TempDir())
	a := newTestDevice(t)
	x := newTestVault(t, a.id)
	x.add(t, a.id, member.Record{Op: member.OpAddRelay, Relay: r.Addrs()[0]})
	never := make(chan struct{}) // the device holds every pull open
	pulls := answerPulls(t, a, x.id, func() []member.Record { return x.state.Records() }, never)
	a.connect(t, r)
	if got := open(t, a, r, ProtoRelay, enrollFrame(t, x.id, x.encoded())); got.typ != wire.MsgRelayStatus {
		t.Fatalf("enrolling X: got %s %v, want RelayStatus", got.typ, got.err)
	}
	nextPull(t, pulls)
	key := pullKey{x.id, a.h.ID()}
	if !r.pullers.Running(key) {
		t.Fatal("no puller runs while its pull is open")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if r.pullers.Running(key) {
		t.Fatal("a puller outlived Run")
	}
	if r.goRun(func(context.Context) { t.Error("work ran after Run returned") }) {
		t.Fatal("goRun started work after Run returned")
	}
}
