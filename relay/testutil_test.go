package relay

import (
	"context"
	"crypto/rand"
	"io"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	p2pprotocol "github.com/libp2p/go-libp2p/core/protocol"
	yamux "github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"

	"github.com/weftsync/weft/internal/p2p"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// Helpers for tests that run a real relay on loopback and talk to it from
// bare libp2p hosts with device keys: no node, membership logs built with
// protocol/member directly.

// runRelay starts a relay with a temporary home on 127.0.0.1 and stops it
// when the test ends.
func runRelay(t *testing.T) *Relay {
	t.Helper()
	r, stop := startRelay(t, t.TempDir())
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("relay run: %v", err)
		}
	})
	return r
}

// startRelay runs a relay with its home at home on loopback; stop ends it
// and returns what Run returned.
func startRelay(t *testing.T, home string) (r *Relay, stop func() error) {
	t.Helper()
	r, err := New(Config{Home: home, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, NoDHT: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return r, func() error {
		cancel()
		return <-done
	}
}

// testDevice is a libp2p host whose peer ID is a device key.
type testDevice struct {
	id *keys.Identity
	h  host.Host
}

func newTestDevice(t *testing.T) *testDevice {
	t.Helper()
	id, err := keys.GenerateIdentity(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := p2p.Key(id)
	if err != nil {
		t.Fatal(err)
	}
	h, err := libp2p.New(
		libp2p.Identity(k),
		libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
		libp2p.DisableMetrics(),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return &testDevice{id: id, h: h}
}

func (d *testDevice) connect(t *testing.T, r *Relay) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.h.Connect(ctx, peer.AddrInfo{ID: r.ID(), Addrs: r.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
}

// testVault is a vault's keys and membership log.
type testVault struct {
	root  keys.RootSecret
	id    keys.VaultID
	ek    keys.EpochKeys
	state *member.State
}

// newTestVault makes a vault whose genesis admits admin.
func newTestVault(t *testing.T, admin *keys.Identity) *testVault {
	t.Helper()
	var root keys.RootSecret
	if _, err := rand.Read(root[:]); err != nil {
		t.Fatal(err)
	}
	v := &testVault{root: root, id: root.Vault().ID, ek: root.Epoch0().Keys(0)}
	v.state = member.NewState(v.id)
	v.apply(t, member.Genesis(admin, root.VaultKey(), 1))
	return v
}

func (v *testVault) apply(t *testing.T, r member.Record) {
	t.Helper()
	if err := v.state.Apply(r); err != nil {
		t.Fatal(err)
	}
}

// add appends a record signed by admin.
func (v *testVault) add(t *testing.T, admin *keys.Identity, op member.Record) {
	t.Helper()
	v.apply(t, v.state.Next(admin, op, 2))
}

// encoded returns the membership log as Enroll carries it.
func (v *testVault) encoded() [][]byte {
	var out [][]byte
	for _, r := range v.state.Records() {
		out = append(out, r.Encode())
	}
	return out
}

// answer is the first frame a relay sent back on a stream.
type answer struct {
	typ    wire.MsgType
	err    wire.Error       // when typ is MsgError
	status wire.RelayStatus // when typ is MsgRelayStatus
	rest   []wire.MsgType   // frames after the first, until the stream ended
}

// open opens proto on the relay, writes frames, and reads what comes back
// until the stream ends (or, for a stream that stays open, for a while).
func open(t *testing.T, d *testDevice, r *Relay, proto p2pprotocol.ID, frames ...[]byte) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := d.h.NewStream(ctx, r.ID(), proto)
	if err != nil {
		t.Fatalf("opening %s: %v", proto, err)
	}
	defer s.Close()
	for _, f := range frames {
		if _, err := s.Write(f); err != nil {
			t.Fatalf("writing on %s: %v", proto, err)
		}
	}
	return readAnswer(t, s)
}

func readAnswer(t *testing.T, s network.Stream) answer {
	t.Helper()
	_ = s.SetReadDeadline(time.Now().Add(5 * time.Second))
	var a answer
	for i := 0; ; i++ {
		mt, p, err := wire.ReadFrame(s, wire.MaxFrameSize)
		if err != nil {
			if i == 0 {
				t.Fatalf("reading the relay's answer: %v", err)
			}
			return a
		}
		if i > 0 {
			a.rest = append(a.rest, mt)
			continue
		}
		a.typ = mt
		switch mt {
		case wire.MsgError:
			a.err, err = wire.ParseError(p)
		case wire.MsgRelayStatus:
			a.status, err = wire.ParseRelayStatus(p)
		}
		if err != nil {
			t.Fatalf("parsing %s: %v", mt, err)
		}
	}
}

// frame encodes one frame.
func frame(t *testing.T, mt wire.MsgType, m wire.Message) []byte {
	t.Helper()
	var b bytesWriter
	if err := wire.WriteFrame(&b, mt, m.AppendBinary(nil)); err != nil {
		t.Fatal(err)
	}
	return b
}

type bytesWriter []byte

func (b *bytesWriter) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }

func hello(t *testing.T, v keys.VaultID) []byte {
	return frame(t, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: v})
}

func enrollFrame(t *testing.T, v keys.VaultID, recs [][]byte) []byte {
	return frame(t, wire.MsgEnroll, wire.Enroll{Vault: v, Records: recs})
}

// waitUntil polls cond until it holds, failing after a generous deadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serveChunks makes d answer the chunk protocol for vault as a device
// does: after the Hello, each WantChunks is answered in order with a Chunk
// for every CID blob has and a ChunkMissing for the rest. asked, if set,
// sees every batch of wanted CIDs first.
func serveChunks(d *testDevice, vault keys.VaultID, asked func([]cid.Cid), blob func(cid.Cid) ([]byte, bool)) {
	d.h.SetStreamHandler(ProtoChunk, func(s network.Stream) {
		defer s.Close()
		if _, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil {
			return
		}
		_ = wire.WriteFrame(s, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: vault}.AppendBinary(nil))
		for {
			_, p, err := wire.ReadFrame(s, wire.MaxFrameSize)
			if err != nil {
				return
			}
			want, err := wire.ParseWantChunks(p)
			if err != nil {
				return
			}
			if asked != nil {
				asked(want.CIDs)
			}
			for _, id := range want.CIDs {
				if data, ok := blob(id); ok {
					_ = wire.WriteFrame(s, wire.MsgChunk, wire.Chunk{CID: id, Envelope: data}.AppendBinary(nil))
				} else {
					_ = wire.WriteFrame(s, wire.MsgChunkMissing, wire.ChunkMissing{CID: id}.AppendBinary(nil))
				}
			}
		}
	})
}

// pulled is one log pull the relay made from a test device: its request
// and how many membership records the device answered with.
type pulled struct {
	req     wire.LogRequest
	members int
}

// answerPulls makes d answer the relay's log pulls for vault as a device
// does (node/logproto.go, serveLog): after the Hello it reads the
// LogRequest and sends the records of log() after the request's
// MemberSeq. It then reports the pull on the returned channel and ends the
// stream once release is closed (nil: at once), so the relay pulls again
// after its backoff. It stops when the test ends.
func answerPulls(t *testing.T, d *testDevice, vault keys.VaultID, log func() []member.Record, release <-chan struct{}) <-chan pulled {
	ctx := t.Context()
	out := make(chan pulled)
	d.h.SetStreamHandler(ProtoLog, func(s network.Stream) {
		defer s.Close()
		if _, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil {
			return
		}
		if err := wire.WriteFrame(s, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: vault}.AppendBinary(nil)); err != nil {
			return
		}
		_, p, err := wire.ReadFrame(s, wire.MaxFrameSize)
		if err != nil {
			return
		}
		req, err := wire.ParseLogRequest(p)
		if err != nil {
			return
		}
		n := 0
		for _, rec := range log() {
			if rec.Seq <= req.MemberSeq {
				continue
			}
			if err := wire.WriteFrame(s, wire.MsgMember, rec.Encode()); err != nil {
				return
			}
			n++
		}
		select {
		case out <- pulled{req: req, members: n}:
		case <-ctx.Done():
			return
		}
		if release != nil {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	})
	return out
}

// nextPull waits for the relay's next pull from a device answering with
// answerPulls.
func nextPull(t *testing.T, pulls <-chan pulled) pulled {
	t.Helper()
	select {
	case p := <-pulls:
		return p
	case <-time.After(30 * time.Second):
		t.Fatal("timed out waiting for the relay to pull")
		return pulled{}
	}
}

// served is what the relay sent on a log stream up to its first
// LogStatus: the sequence numbers of the membership records and the
// entries, in order.
type served struct {
	members []uint64
	entries []*entry.Entry
	status  wire.LogStatus
}

// readLog opens a log stream to the relay as d for vault, sends req, and
// reads what comes back up to the first LogStatus (sent after every
// record and entry the opener lacks).
func readLog(t *testing.T, d *testDevice, r *Relay, vault keys.VaultID, req wire.LogRequest) served {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := d.h.NewStream(ctx, r.ID(), ProtoLog)
	if err != nil {
		t.Fatalf("opening the log stream: %v", err)
	}
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := s.Write(append(hello(t, vault), frame(t, wire.MsgLogRequest, req)...)); err != nil {
		t.Fatalf("writing the log request: %v", err)
	}
	var out served
	for {
		mt, p := readLogFrame(t, s)
		switch mt {
		case wire.MsgMember:
			rec, err := member.Decode(p)
			if err != nil {
				t.Fatalf("membership record from the relay: %v", err)
			}
			out.members = append(out.members, rec.Seq)
		case wire.MsgEntry:
			e, err := entry.Decode(p)
			if err != nil {
				t.Fatalf("entry from the relay: %v", err)
			}
			out.entries = append(out.entries, e)
		case wire.MsgLogStatus:
			if out.status, err = wire.ParseLogStatus(p); err != nil {
				t.Fatalf("log status from the relay: %v", err)
			}
			return out
		}
	}
}

// readLogFrame reads one frame of the relay's log stream s, failing the
// test on a read error or an Error frame.
func readLogFrame(t *testing.T, s io.Reader) (wire.MsgType, []byte) {
	t.Helper()
	mt, p, err := wire.ReadFrame(s, wire.MaxFrameSize)
	if err != nil {
		t.Fatalf("reading the relay's log: %v", err)
	}
	if mt == wire.MsgError {
		we, _ := wire.ParseError(p)
		t.Fatalf("the relay answered the log request with %v", we)
	}
	return mt, p
}

// memberLab is a relay serving vault x of device a, with a second member
// m that never connects (its entries reach the replica directly), the
// relay's pull from a held open until release is closed.
type memberLab struct {
	r       *Relay
	a, m    *testDevice
	x       *testVault
	rep     *replica
	pulls   <-chan pulled
	release chan struct{}
}

func newMemberLab(t *testing.T) memberLab {
	t.Helper()
	r := runRelay(t)
	a := newTestDevice(t)
	m := newTestDevice(t)
	x := newTestVault(t, a.id)
	x.add(t, a.id, member.Record{Op: member.OpAddRelay, Relay: r.Addrs()[0]})
	x.add(t, a.id, member.Record{Op: member.OpAdd, Device: m.id.ID(), Role: member.RoleMember})
	release := make(chan struct{})
	pulls := answerPulls(t, a, x.id, func() []member.Record { return nil }, release)
	a.connect(t, r)
	if got := open(t, a, r, ProtoRelay, enrollFrame(t, x.id, x.encoded())); got.typ != wire.MsgRelayStatus {
		t.Fatalf("enrolling X: got %s %v, want RelayStatus", got.typ, got.err)
	}
	nextPull(t, pulls) // held open until release
	return memberLab{r: r, a: a, m: m, x: x, rep: r.replica(x.id), pulls: pulls, release: release}
}
