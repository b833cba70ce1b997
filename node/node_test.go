package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weftsync/weft/node/enrol"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"lukechampine.com/blake3"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/connect"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
	"github.com/weftsync/weft/store/home"
)

// testNode creates a vault in a fresh home and runs its node on loopback.
func testNode(t *testing.T) (*Node, string) {
	t.Helper()
	return testNodeWith(t, Config{})
}

// testHome makes a home in a temporary directory holding one new vault,
// and returns it with the vault's folder.
func testHome(t testing.TB) (*home.Home, string) {
	t.Helper()
	dir := t.TempDir()
	h, err := home.Open(filepath.Join(dir, "home"))
	if err != nil {
		t.Fatal(err)
	}
	folderPath := filepath.Join(dir, "folder")
	if _, _, err := enrol.InitVault(h, folderPath, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	return h, folderPath
}

// testNodeWith is testNode with some Config fields set by the caller.
func testNodeWith(t testing.TB, cfg Config) (*Node, string) {
	t.Helper()
	h, folderPath := testHome(t)
	cfg.Home, cfg.ListenAddrs = h, []string{"/ip4/127.0.0.1/tcp/0"}
	if cfg.APIAddr == "" {
		cfg.APIAddr = "-" // no API unless the test asks for one
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("node run: %v", err)
		}
	})
	<-n.Ready()
	for _, v := range n.vaultsNow() {
		<-v.firstScan // so the test's own changes meet no scan of the start
	}
	return n, folderPath
}

// outsiderHost is a libp2p host with a fresh device key.
func outsiderHost(t *testing.T) (host.Host, *keys.Identity) {
	t.Helper()
	id, err := keys.GenerateIdentity(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h, err := connect.NewHost(connect.HostConfig{Identity: id, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, id
}

func connectHost(t *testing.T, h host.Host, n *Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Connect(ctx, peer.AddrInfo{ID: n.host.ID(), Addrs: n.host.Addrs()}); err != nil {
		t.Fatal(err)
	}
}

// readAll reads frames until the stream ends and returns them.
func readFrames(t *testing.T, s network.Stream) []wire.MsgType {
	t.Helper()
	_ = s.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got []wire.MsgType
	for {
		mt, p, err := wire.ReadFrame(s, wire.MaxFrameSize)
		if err != nil {
			return got
		}
		got = append(got, mt)
		if mt == wire.MsgError {
			e, _ := wire.ParseError(p)
			t.Logf("peer error: %v", e)
		}
	}
}

func TestNonMemberGetsNothing(t *testing.T) {
	n, _ := testNode(t)
	h, _ := outsiderHost(t)
	connectHost(t, h, n)
	vault := n.vaultsNow()[0].id
	for _, proto := range []struct {
		id    string
		vault keys.VaultID
		want  wire.ErrorCode
	}{
		{string(ProtoLog), vault, wire.CodeNotMember},
		{string(ProtoChunk), vault, wire.CodeNotMember},
		{string(ProtoLog), keys.VaultID{9}, wire.CodeNotMember}, // the same answer: an outsider cannot tell which vaults are served
	} {
		s, err := h.NewStream(context.Background(), n.host.ID(), ProtoLog)
		if proto.id == string(ProtoChunk) {
			s, err = h.NewStream(context.Background(), n.host.ID(), ProtoChunk)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.WriteFrame(s, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: proto.vault}.AppendBinary(nil)); err != nil {
			t.Fatal(err)
		}
		_ = s.SetReadDeadline(time.Now().Add(10 * time.Second))
		mt, p, err := wire.ReadFrame(s, wire.MaxFrameSize)
		if err != nil {
			t.Fatalf("%s: reading answer: %v", proto.id, err)
		}
		e, _ := wire.ParseError(p)
		if mt != wire.MsgError || e.Code != proto.want {
			t.Fatalf("%s: got %s %v, want Error with code %d", proto.id, mt, e, proto.want)
		}
		if rest := readFrames(t, s); len(rest) != 0 {
			t.Fatalf("%s: got %v after the error, want nothing", proto.id, rest)
		}
		s.Close()
	}
	// Pairing with a made-up proof.
	s, err := h.NewStream(context.Background(), n.host.ID(), ProtoPair)
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.WriteFrame(s, wire.MsgPairRequest, wire.PairRequest{Proof: bytes.Repeat([]byte{1}, 32)}.AppendBinary(nil)); err != nil {
		t.Fatal(err)
	}
	got := readFrames(t, s)
	if len(got) != 1 || got[0] != wire.MsgError {
		t.Fatalf("pairing with a bad proof: got %v, want one Error", got)
	}
	if n.vaultsNow()[0].roster.IsMember(keysOf(t, h)) {
		t.Fatalf("outsider became a member")
	}
}

func keysOf(t *testing.T, h host.Host) keys.DeviceID {
	d, err := DeviceIDOf(h.ID())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// joinAsMember makes a fresh device a member of n's vault through a real
// invite, and returns its host and identity.
func joinAsMember(t *testing.T, n *Node) (host.Host, *keys.Identity) {
	t.Helper()
	h, id := outsiderHost(t)
	inv, err := n.Members().Invite(keys.VaultID{}, time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := enrol.RequestJoin(ctx, h, id, inv, "", nil); err != nil {
		t.Fatal(err)
	}
	return h, id
}

func TestOversizeFrameIsRefused(t *testing.T) {
	n, _ := testNode(t)
	h, _ := joinAsMember(t, n)
	s, err := h.NewStream(context.Background(), n.host.ID(), ProtoLog)
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.WriteFrame(s, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: n.vaultsNow()[0].id}.AppendBinary(nil)); err != nil {
		t.Fatal(err)
	}
	// A length far over the limit, then a little junk: the node must drop
	// the stream without allocating for it.
	hostile := binary.AppendUvarint(nil, 1<<40)
	if _, err := s.Write(append(hostile, 0x10, 1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	got := readFrames(t, s)
	if len(got) != 1 || got[0] != wire.MsgHello {
		t.Fatalf("got %v, want the node's Hello and then the end of the stream", got)
	}
	// The node still serves a well-behaved stream.
	s2, err := h.NewStream(context.Background(), n.host.ID(), ProtoLog)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	_ = wire.WriteFrame(s2, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: n.vaultsNow()[0].id}.AppendBinary(nil))
	_ = wire.WriteFrame(s2, wire.MsgLogRequest, wire.LogRequest{}.AppendBinary(nil))
	_ = s2.SetReadDeadline(time.Now().Add(10 * time.Second))
	for _, want := range []wire.MsgType{wire.MsgHello, wire.MsgPeers, wire.MsgMember} {
		mt, _, err := wire.ReadFrame(s2, wire.MaxFrameSize)
		if err != nil || mt != want {
			t.Fatalf("after the hostile stream: got %s, %v; want %s", mt, err, want)
		}
	}
}

func TestHostileEntryPathsWriteNothing(t *testing.T) {
	n, folderPath := testNode(t)
	h, id := joinAsMember(t, n)
	v := n.vaultsNow()[0]
	var bad []*entry.Entry
	var prev entry.Head
	for i, p := range []string{"../x", "/etc/x", "a/../../x"} {
		body := &entry.Body{Versions: []entry.Version{{Path: p, Kind: entry.KindFile, Mode: 0o644, Size: 4, Inline: []byte("evil")}}}
		e, err := entry.TestOnlyNewUnchecked(entry.Config{
			Identity: id, Vault: v.id, Prev: prev, Clock: uint64(i + 1), Keys: v.ek, Time: 1, Rand: rand.Reader,
		}, body)
		if err != nil {
			t.Fatal(err)
		}
		bad = append(bad, e)
		prev = e.Head()
	}
	evs, stop := n.Subscribe()
	defer stop()
	serveLog(h, v.id, bad, nil)
	connectHost(t, h, n)
	// The node refuses the first entry and ends the stream; wait for it
	// to say so rather than for a while.
	waitInvalidEntry(t, evs, "the hostile member's entries")
	if got := v.db.Head(id.ID()).Seq; got != 0 {
		t.Fatalf("stored %d hostile entries, want 0", got)
	}
	for _, p := range []string{filepath.Join(filepath.Dir(folderPath), "x"), "/etc/x", filepath.Join(folderPath, "x")} {
		if b, err := os.ReadFile(p); err == nil && string(b) == "evil" {
			t.Fatalf("hostile content written at %s", p)
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: %v", p, err)
		}
	}
}

// TestEntriesOutOfOrder checks that entries arriving ahead of their
// author's head (as when several peers stream at once) are held back and
// ingested once the gap fills, and that their files are applied.
func TestEntriesOutOfOrder(t *testing.T) {
	n, folderPath := testNode(t)
	h, id := joinAsMember(t, n)
	v := n.vaultsNow()[0]
	var es []*entry.Entry
	var prev entry.Head
	for i := range 3 {
		data := []byte(fmt.Sprintf("file %d", i+1))
		body := &entry.Body{Versions: []entry.Version{{
			Path: fmt.Sprintf("f%d.txt", i+1), Kind: entry.KindFile, Mode: 0o644, MTime: 1e18,
			Size: uint64(len(data)), Inline: data, Hash: blake3.Sum256(data),
		}}}
		e, err := entry.New(entry.Config{Identity: id, Vault: v.id, Prev: prev, Clock: uint64(i + 1), Keys: v.ek, Time: 1, Rand: rand.Reader}, body)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
		prev = e.Head()
	}
	serveLog(h, v.id, []*entry.Entry{es[2], es[1], es[0]}, nil)
	connectHost(t, h, n)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ok := v.db.Head(id.ID()).Seq == 3
		for i := range 3 {
			b, err := os.ReadFile(filepath.Join(folderPath, fmt.Sprintf("f%d.txt", i+1)))
			ok = ok && err == nil && string(b) == fmt.Sprintf("file %d", i+1)
		}
		if ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("head %d after entries 3, 2, 1; want 3 with every file applied", v.db.Head(id.ID()).Seq)
}

// serveLog makes h answer /weft/log/1 for vault like a member would,
// sending entries (in the given order) after the opener's request, then
// calling served, then waiting for the opener to hang up.
func serveLog(h host.Host, vault keys.VaultID, entries []*entry.Entry, served func()) {
	h.SetStreamHandler(ProtoLog, func(s network.Stream) {
		defer s.Close()
		if _, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil {
			return
		}
		_ = wire.WriteFrame(s, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: vault}.AppendBinary(nil))
		if _, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil {
			return
		}
		for _, e := range entries {
			_ = wire.WriteFrame(s, wire.MsgEntry, e.Bytes())
		}
		if served != nil {
			served()
		}
		_, _, _ = wire.ReadFrame(s, wire.MaxFrameSize) // until the node hangs up
	})
}

// waitInvalidEntry waits for the event that says the node refused an invalid
// entry (what describes the entry, for the failure).
func waitInvalidEntry(t *testing.T, evs <-chan api.Event, what string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-evs:
			if ev.Type == api.EventError && ev.Kind == eventKindInvalidEntry {
				return
			}
		case <-deadline:
			t.Fatalf("the node never refused %s", what)
		}
	}
}

// openWithoutRun opens a node on h that is not running (no watcher, no
// DHT, no API): a test drives its vaults by hand (Scan, reconcile).
func openWithoutRun(t testing.TB, h *home.Home) *Node {
	t.Helper()
	n, err := New(Config{Home: h, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, APIAddr: "-",
		NoWatcher: true, NoDHT: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
