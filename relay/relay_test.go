package relay

import (
	"bytes"
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/network"
	p2pprotocol "github.com/libp2p/go-libp2p/core/protocol"
	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// TestRelayAccess runs a real relay serving two vaults, X and Y, each
// enrolled by its admin, and checks that a non-member gets nothing from
// it, that a member of one vault gets nothing of the other, and that an
// Enroll with a forged, foreign or tampered membership log, or for a vault
// that does not list the relay, is refused. A member of X getting X's
// entry and chunk is the positive control.
func TestRelayAccess(t *testing.T) {
	r := runRelay(t)
	raddr := r.Addrs()[0]
	addRelay := member.Record{Op: member.OpAddRelay, Relay: raddr}

	a := newTestDevice(t) // admin of X
	x := newTestVault(t, a.id)
	x.add(t, a.id, addRelay)
	b := newTestDevice(t) // admin of Y
	y := newTestVault(t, b.id)
	y.add(t, b.id, addRelay)
	c := newTestDevice(t) // admin of Z, which does not list the relay
	z := newTestVault(t, c.id)
	out := newTestDevice(t) // no vault at all

	// X has an entry with a chunk; its admin serves both to the relay.
	plain := make([]byte, 8<<10)
	if _, err := rand.Read(plain); err != nil {
		t.Fatal(err)
	}
	sealed, err := chunk.Seal(chunk.KeysFrom(x.ek), plain)
	if err != nil {
		t.Fatal(err)
	}
	e, err := entry.New(entry.Config{Identity: a.id, Vault: x.id, Clock: 1, Keys: x.ek, Time: 1, Rand: rand.Reader},
		&entry.Body{Versions: []entry.Version{{Path: "secret.bin", Kind: entry.KindFile, Mode: 0o644, MTime: 1,
			Size: uint64(len(plain)), Hash: blake3.Sum256(plain), Chunks: []entry.ChunkRef{{CID: sealed.CID, Size: uint32(len(plain))}}}}})
	if err != nil {
		t.Fatal(err)
	}
	a.h.SetStreamHandler(ProtoLog, func(s network.Stream) {
		defer s.Close()
		if _, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil {
			return
		}
		_ = wire.WriteFrame(s, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: x.id}.AppendBinary(nil))
		if _, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil {
			return
		}
		_ = wire.WriteFrame(s, wire.MsgEntry, e.Bytes())
		for {
			if _, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil {
				return
			}
		}
	})
	serveChunks(a, x.id, nil, func(id cid.Cid) ([]byte, bool) {
		if id.Equals(sealed.CID) {
			return sealed.Envelope, true
		}
		return nil, false
	})

	for _, d := range []*testDevice{a, b, c, out} {
		d.connect(t, r)
	}
	for _, en := range []struct {
		d *testDevice
		v *testVault
	}{{a, x}, {b, y}} {
		got := open(t, en.d, r, ProtoRelay, enrollFrame(t, en.v.id, en.v.encoded()))
		if got.typ != wire.MsgRelayStatus || got.status.Vault != en.v.id {
			t.Fatalf("enrolling %s: got %s %v, want RelayStatus for the vault", en.v.id, got.typ, got.err)
		}
	}
	waitUntil(t, "the relay to hold X's entry and chunk", func() bool {
		rep := r.replica(x.id)
		return rep != nil && rep.heldVector()[a.id.ID()] == 1
	})

	// Positive control: X's admin gets X's entry and chunk.
	entries, chunks := fetchAll(t, a, r, x.id, sealed.CID)
	if len(entries) != 1 || !bytes.Equal(entries[0], e.Bytes()) || len(chunks) != 1 || !bytes.Equal(chunks[0], sealed.Envelope) {
		t.Fatalf("member of X: got %d entries and %d chunks, want X's entry and chunk", len(entries), len(chunks))
	}

	// A log of vault X that an outsider wrote itself: a genesis admitting
	// itself, signed with a vault key of its own, naming the relay.
	forgedLog := squatLog(out.id, x.id, raddr)
	// X's log with the relay record's signature altered.
	tampered := x.encoded()
	tampered[1] = bytes.Clone(tampered[1])
	tampered[1][len(tampered[1])-1] ^= 0x01

	logReq := frame(t, wire.MsgLogRequest, wire.LogRequest{})
	want := frame(t, wire.MsgWantChunks, wire.WantChunks{CIDs: []cid.Cid{sealed.CID}})
	tests := []struct {
		name   string
		d      *testDevice
		proto  p2pprotocol.ID
		frames [][]byte
		code   wire.ErrorCode
	}{
		{"outsider reads X's log", out, ProtoLog, [][]byte{hello(t, x.id), logReq}, wire.CodeNotMember},
		{"outsider reads X's chunk", out, ProtoChunk, [][]byte{hello(t, x.id), want}, wire.CodeNotMember},
		{"outsider reads a vault not served", out, ProtoLog, [][]byte{hello(t, keys.VaultID{9}), logReq}, wire.CodeNotMember},
		{"outsider enrolls X's own log", out, ProtoRelay, [][]byte{enrollFrame(t, x.id, x.encoded())}, wire.CodeNotMember},
		{"outsider enrolls a forged log of X", out, ProtoRelay, [][]byte{enrollFrame(t, x.id, forgedLog)}, wire.CodeProtocol},
		{"outsider enrolls X's log, tampered", out, ProtoRelay, [][]byte{enrollFrame(t, x.id, tampered)}, wire.CodeProtocol},
		{"outsider enrolls Y's log as X", out, ProtoRelay, [][]byte{enrollFrame(t, x.id, y.encoded())}, wire.CodeProtocol},
		{"member of Y reads X's log", b, ProtoLog, [][]byte{hello(t, x.id), logReq}, wire.CodeNotMember},
		{"member of Y reads X's chunk", b, ProtoChunk, [][]byte{hello(t, x.id), want}, wire.CodeNotMember},
		{"member of Y enrolls X's log", b, ProtoRelay, [][]byte{enrollFrame(t, x.id, x.encoded())}, wire.CodeNotMember},
		{"member of Y enrolls Y's log as X", b, ProtoRelay, [][]byte{enrollFrame(t, x.id, y.encoded())}, wire.CodeProtocol},
		{"member of X reads Y's log", a, ProtoLog, [][]byte{hello(t, y.id), logReq}, wire.CodeNotMember},
		{"member of X reads X's chunk under Y", a, ProtoChunk, [][]byte{hello(t, y.id), want}, wire.CodeNotMember},
		{"admin of Z enrolls Z, which does not list the relay", c, ProtoRelay, [][]byte{enrollFrame(t, z.id, z.encoded())}, wire.CodeNotMember},
		{"admin of Z reads Z's log", c, ProtoLog, [][]byte{hello(t, z.id), logReq}, wire.CodeNotMember},
		{"admin of Z reads X's log", c, ProtoLog, [][]byte{hello(t, x.id), logReq}, wire.CodeNotMember},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := open(t, tt.d, r, tt.proto, tt.frames...)
			if got.typ != wire.MsgError || got.err.Code != tt.code {
				t.Fatalf("got %s %v, want Error with code %d", got.typ, got.err, tt.code)
			}
			if len(got.rest) != 0 {
				t.Fatalf("got %v after the error, want nothing", got.rest)
			}
		})
	}

	// None of it changed what the relay serves: X still lists only its
	// admin, and the outsider still gets nothing.
	if rep := r.replica(x.id); rep.isMember(out.id.ID()) || rep.isMember(b.id.ID()) || len(rep.members()) != 1 {
		t.Fatalf("X's members on the relay: got %v, want only its admin", rep.members())
	}
	if r.replica(z.id) != nil {
		t.Fatalf("the relay keeps a replica of Z, which does not list it")
	}
	if got := open(t, out, r, ProtoLog, hello(t, x.id), logReq); got.typ != wire.MsgError || got.err.Code != wire.CodeNotMember {
		t.Fatalf("outsider after the forged enrollments: got %s %v, want Error %d", got.typ, got.err, wire.CodeNotMember)
	}
}

// TestRelayRefusesVaultSquatter: a stranger who knows a vault's ID (not
// its root secret) enrolls a membership log it made for that ID before the
// vault's own devices do. The relay refuses it, because the genesis does
// not prove the vault ID, keeps no replica, and the real vault then
// enrolls as usual (docs/security.md, "Vault-ID squatting").
func TestRelayRefusesVaultSquatter(t *testing.T) {
	r := runRelay(t)
	raddr := r.Addrs()[0]
	a := newTestDevice(t) // admin of X
	x := newTestVault(t, a.id)
	x.add(t, a.id, member.Record{Op: member.OpAddRelay, Relay: raddr})
	out := newTestDevice(t) // knows X's ID, nothing else
	a.connect(t, r)
	out.connect(t, r)

	// X's genesis is public (relays see it): the stranger may reuse its
	// vault key and vault signature, but not for another admin.
	stolen := x.state.Records()[0]
	stolen.Device = out.id.ID()
	stolen.Sign(out.id)
	// A genesis without any vault key: what anyone could make before
	// vault IDs were bound to a key.
	bare := member.Record{Format: member.Format, Vault: x.id, Seq: 1, Op: member.OpGenesis,
		Device: out.id.ID(), Role: member.RoleAdmin, Time: 1}
	bare.Sign(out.id)
	tests := []struct {
		name string
		log  [][]byte
		want error
	}{
		{"genesis signed with the stranger's own vault key", squatLog(out.id, x.id, raddr), member.ErrVaultKey},
		{"X's vault signature moved to the stranger", chainLog(out.id, stolen, raddr), member.ErrVaultSignature},
		{"genesis without a vault key", chainLog(out.id, bare, raddr), member.ErrVaultKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := open(t, out, r, ProtoRelay, enrollFrame(t, x.id, tt.log))
			if got.typ != wire.MsgError || got.err.Code != wire.CodeProtocol {
				t.Fatalf("got %s %v, want Error with code %d", got.typ, got.err, wire.CodeProtocol)
			}
			if !strings.Contains(got.err.Reason, tt.want.Error()) {
				t.Fatalf("got reason %q, want it to say %q", got.err.Reason, tt.want)
			}
			if r.replica(x.id) != nil {
				t.Fatal("the relay keeps a replica of X after the stranger's enrollment")
			}
		})
	}

	got := open(t, a, r, ProtoRelay, enrollFrame(t, x.id, x.encoded()))
	if got.typ != wire.MsgRelayStatus || got.status.Vault != x.id {
		t.Fatalf("X's admin enrolling after the squatter: got %s %v, want RelayStatus for X", got.typ, got.err)
	}
	if rep := r.replica(x.id); rep == nil || len(rep.members()) != 1 || !rep.isMember(a.id.ID()) {
		t.Fatal("X's members on the relay: want only its admin")
	}
}

// squatLog is a membership log for vault id that signer makes without
// the vault's root secret: a genesis admitting signer, signed by a vault
// key signer made up (whose public key names another vault), then an
// add-relay record for relay.
func squatLog(signer *keys.Identity, id keys.VaultID, relay string) [][]byte {
	var fake keys.RootSecret
	copy(fake[:], signer.Seed())
	g := member.Genesis(signer, fake.VaultKey(), 1)
	g.Vault = id
	g.Sign(signer)
	return chainLog(signer, g, relay)
}

// chainLog is the log genesis g, then an add-relay record for relay signed
// by signer and chained to g. It applies no rule: the relay must.
func chainLog(signer *keys.Identity, g member.Record, relay string) [][]byte {
	add := member.Record{Format: member.Format, Vault: g.Vault, Seq: 2, Prev: g.CID().Bytes(),
		Op: member.OpAddRelay, Relay: relay, Time: 2}
	add.Sign(signer)
	return [][]byte{g.Encode(), add.Encode()}
}

// TestRelayRefusesRevokedDevice: a device revoked from X gets nothing of X
// from the relay, and cannot enroll X with the part of its log from before
// its revocation: the relay judges an enrolling device by the membership
// its replica holds, not only by the log sent (relay/serve.go,
// handleEnroll). An older log, from the revoked device or from a member,
// does not roll the replica's membership back.
func TestRelayRefusesRevokedDevice(t *testing.T) {
	r := runRelay(t)
	a := newTestDevice(t)
	m := newTestDevice(t)
	x := newTestVault(t, a.id)
	x.add(t, a.id, member.Record{Op: member.OpAddRelay, Relay: r.Addrs()[0]})
	x.add(t, a.id, member.Record{Op: member.OpAdd, Device: m.id.ID(), Role: member.RoleMember})
	before := x.encoded() // m is a member here
	var next keys.EpochSecret
	if _, err := rand.Read(next[:]); err != nil {
		t.Fatal(err)
	}
	sealedNext, err := keys.SealEpochSecret(rand.Reader, a.id.ID(), x.id, 1, next)
	if err != nil {
		t.Fatal(err)
	}
	x.add(t, a.id, member.Record{Op: member.OpRevoke, Device: m.id.ID(), Epoch: 1,
		Keys: []member.SealedKey{{Device: a.id.ID(), Sealed: sealedNext}}})
	a.connect(t, r)
	m.connect(t, r)
	if got := open(t, a, r, ProtoRelay, enrollFrame(t, x.id, x.encoded())); got.typ != wire.MsgRelayStatus {
		t.Fatalf("admin enrolling X: got %s %v, want RelayStatus", got.typ, got.err)
	}
	logReq := frame(t, wire.MsgLogRequest, wire.LogRequest{})
	if got := open(t, m, r, ProtoLog, hello(t, x.id), logReq); got.typ != wire.MsgError || got.err.Code != wire.CodeNotMember {
		t.Fatalf("revoked device reading X's log: got %s %v, want Error %d", got.typ, got.err, wire.CodeNotMember)
	}
	got := open(t, m, r, ProtoRelay, enrollFrame(t, x.id, before))
	if got.typ != wire.MsgError || got.err.Code != wire.CodeNotMember {
		t.Fatalf("revoked device enrolling with the log from before its revocation: got %s %v, want Error %d "+
			"(membership judged by the log sent, not the replica's)", got.typ, got.err, wire.CodeNotMember)
	}
	if len(got.rest) != 0 {
		t.Fatalf("got %v after the error, want nothing", got.rest)
	}
	// A member bringing the same older log is served, and the replica
	// keeps the revocation.
	if got := open(t, a, r, ProtoRelay, enrollFrame(t, x.id, before)); got.typ != wire.MsgRelayStatus {
		t.Fatalf("admin enrolling X with an older log: got %s %v, want RelayStatus", got.typ, got.err)
	}
	rep := r.replica(x.id)
	if n, want := len(rep.records()), len(x.state.Records()); n != want || rep.isMember(m.id.ID()) {
		t.Fatalf("the relay's membership of X after the older logs: %d records, revoked device a member: %v; want %d records, not a member",
			n, rep.isMember(m.id.ID()), want)
	}
	if got := open(t, m, r, ProtoLog, hello(t, x.id), logReq); got.typ != wire.MsgError || got.err.Code != wire.CodeNotMember {
		t.Fatalf("revoked device reading X's log after enrolling: got %s %v, want Error %d", got.typ, got.err, wire.CodeNotMember)
	}
}

// fetchAll reads vault v's entries from the relay as d, and asks for the
// chunk c.
func fetchAll(t *testing.T, d *testDevice, r *Relay, v keys.VaultID, c cid.Cid) (entries, chunks [][]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := d.h.NewStream(ctx, r.ID(), ProtoLog)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = s.Write(append(hello(t, v), frame(t, wire.MsgLogRequest, wire.LogRequest{})...))
	for {
		mt, p, err := wire.ReadFrame(s, wire.MaxFrameSize)
		if err != nil {
			t.Fatalf("reading X's log as a member: %v", err)
		}
		if mt == wire.MsgEntry {
			entries = append(entries, p)
		}
		if mt == wire.MsgLogStatus {
			break // after every entry the opener lacks
		}
	}
	s.Close()
	s, err = d.h.NewStream(ctx, r.ID(), ProtoChunk)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = s.Write(append(hello(t, v), frame(t, wire.MsgWantChunks, wire.WantChunks{CIDs: []cid.Cid{c}})...))
	for range 2 {
		mt, p, err := wire.ReadFrame(s, wire.MaxFrameSize)
		if err != nil {
			t.Fatalf("reading X's chunk as a member: %v", err)
		}
		if mt == wire.MsgChunk {
			ch, err := wire.ParseChunk(p)
			if err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, ch.Envelope)
		}
	}
	return entries, chunks
}
