package node

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/wire"
	"github.com/weftsync/weft/store/home"
)

// Acceptance checks of issue 4 ("a device") that no other test makes
// directly: the log stream pushes new entries without being asked again,
// the chunk protocol answers pipelined want-lists in order and serves a
// chunk only from a file that still holds it, and the local API listens
// on loopback only. None depends on timing: each blocks on a frame or a
// state, with a deadline only as a guard.

// auditReadFrame reads one frame from s, failing the test on error.
func auditReadFrame(t *testing.T, s network.Stream) (wire.MsgType, []byte) {
	t.Helper()
	_ = s.SetReadDeadline(time.Now().Add(30 * time.Second))
	mt, p, err := wire.ReadFrame(s, wire.MaxFrameSize)
	if err != nil {
		t.Fatalf("reading a frame: %v", err)
	}
	return mt, p
}

// auditWriteScanned waits for the node's first scan to finish (so it
// cannot catch the file half written), writes name whole (a rename from
// outside the folder) and records it with a scan.
func auditWriteScanned(t *testing.T, n *Node, folderPath, name string, data []byte) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !n.Status().Folders[0].InitialScanDone {
		if time.Now().After(deadline) {
			t.Fatal("the first scan did not finish")
		}
		time.Sleep(10 * time.Millisecond)
	}
	tmp := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(folderPath, name)); err != nil {
		t.Fatal(err)
	}
	if _, err := n.vaultsNow()[0].scan(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

// TestAuditLogPushesNewEntries opens one log stream as a member, reads the
// catch-up to its LogStatus, then has the node record a new file: the entry
// must arrive on the same stream with nothing more sent by the opener (the
// answerer pushes; the opener never polls).
func TestAuditLogPushesNewEntries(t *testing.T) {
	n, folderPath := testNodeWith(t, Config{NoWatcher: true})
	h, _ := joinAsMember(t, n)
	v := n.vaultsNow()[0]
	auditWriteScanned(t, n, folderPath, "first.md", []byte("first"))

	s := openLogStream(t, h, n, v)
	entries := 0
	for {
		mt, _ := auditReadFrame(t, s)
		if mt == wire.MsgEntry {
			entries++
		}
		if mt == wire.MsgLogStatus {
			break
		}
	}
	if entries != 1 {
		t.Fatalf("catch-up sent %d entries, want the 1 recorded", entries)
	}

	// Nothing more is written to the stream from here on.
	auditWriteScanned(t, n, folderPath, "second.md", []byte("second"))
	for {
		mt, _ := auditReadFrame(t, s)
		if mt == wire.MsgEntry {
			return // pushed
		}
		if mt != wire.MsgLogStatus && mt != wire.MsgMember && mt != wire.MsgPeers {
			t.Fatalf("got %s on the open log stream, want the new entry pushed", mt)
		}
	}
}

// auditChunksOf returns the CIDs of path's chunks in file order, as the
// index recorded them.
func auditChunksOf(v *vault, path string) []cid.Cid {
	v.mu.Lock()
	refs := v.index.Rec(path).Chunks
	v.mu.Unlock()
	out := make([]cid.Cid, len(refs))
	for i, r := range refs {
		out[i] = r.CID
	}
	return out
}

// auditWant opens a chunk stream as h, sends cids in batches of batch
// without reading in between (pipelined), and returns the answers in
// order: a verified envelope, or nil for ChunkMissing.
func auditWant(t *testing.T, s network.Stream, cids []cid.Cid, batch int) [][]byte {
	t.Helper()
	for i := 0; i < len(cids); i += batch {
		w := wire.WantChunks{CIDs: cids[i:min(i+batch, len(cids))]}
		if err := wire.WriteFrame(s, wire.MsgWantChunks, w.AppendBinary(nil)); err != nil {
			t.Fatal(err)
		}
	}
	out := make([][]byte, len(cids))
	for i, c := range cids {
		mt, p := auditReadFrame(t, s)
		switch mt {
		case wire.MsgChunk:
			ch, err := wire.ParseChunk(p)
			if err != nil {
				t.Fatal(err)
			}
			if !ch.CID.Equals(c) {
				t.Fatalf("answer %d is chunk %s, want %s (answers in request order)", i, ch.CID, c)
			}
			if err := chunk.VerifyCID(c, ch.Envelope); err != nil {
				t.Fatalf("answer %d does not verify: %v", i, err)
			}
			out[i] = ch.Envelope
		case wire.MsgChunkMissing:
			m, err := wire.ParseChunkMissing(p)
			if err != nil {
				t.Fatal(err)
			}
			if !m.CID.Equals(c) {
				t.Fatalf("answer %d says %s is missing, want an answer for %s", i, m.CID, c)
			}
		default:
			t.Fatalf("answer %d: got %s, want Chunk or ChunkMissing", i, mt)
		}
	}
	return out
}

// TestAuditChunkServedOnlyFromUnchangedFile checks /weft/chunk/1 as a
// member sees it: several want-lists sent before any answer are answered
// in order, each chunk verifying against its CID; once the file changes
// on disk (without a rescan), none of its recorded chunks is served, even
// when the change keeps the size, mtime and inode (only re-creating the
// chunk and checking its CID can tell).
func TestAuditChunkServedOnlyFromUnchangedFile(t *testing.T) {
	n, folderPath := testNodeWith(t, Config{NoWatcher: true})
	// The version store would serve the recorded chunks (verified, from
	// its own copy): this test is about the folder's files.
	if _, err := n.API().SetVersionPolicy(context.Background(), folderPath, api.VersionPolicy{Off: true}); err != nil {
		t.Fatal(err)
	}
	h, _ := joinAsMember(t, n)
	v := n.vaultsNow()[0]
	p := filepath.Join(folderPath, "big.bin")
	data := make([]byte, 600<<10)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	auditWriteScanned(t, n, folderPath, "big.bin", data)
	cids := auditChunksOf(v, "big.bin")
	if len(cids) < 4 {
		t.Fatalf("big.bin has %d chunks, want several", len(cids))
	}
	open := func() network.Stream {
		s, err := h.NewStream(context.Background(), n.host.ID(), ProtoChunk)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Reset() })
		if err := wire.WriteFrame(s, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: v.id}.AppendBinary(nil)); err != nil {
			t.Fatal(err)
		}
		if mt, _ := auditReadFrame(t, s); mt != wire.MsgHello {
			t.Fatalf("got %s, want the answerer's Hello", mt)
		}
		return s
	}

	s := open()
	got := auditWant(t, s, cids, 2)
	for i, env := range got {
		if env == nil {
			t.Fatalf("chunk %d of the unchanged file was not served", i)
		}
	}

	// Same size, same inode, mtime put back: only the content differs.
	junk := make([]byte, len(data))
	if _, err := rand.Read(junk); err != nil {
		t.Fatal(err)
	}
	overwriteKeepingStat(t, p, 0, junk)
	got = auditWant(t, s, cids, 3)
	for i, env := range got {
		if env != nil {
			t.Fatalf("chunk %d served from a file whose content changed since its scan", i)
		}
	}

	// A plain edit (the mtime moves) is refused before anything is read.
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got = auditWant(t, open(), cids, len(cids))
	for i, env := range got {
		if env != nil {
			t.Fatalf("chunk %d served from a file edited since its scan", i)
		}
	}
}

// TestAuditAPIOnLoopbackOnly checks the local API's address rules: by
// default a random port on 127.0.0.1, recorded in the home with its token
// (0600); a non-loopback address is refused and the node does not start.
func TestAuditAPIOnLoopbackOnly(t *testing.T) {
	start := func(apiAddr string) (*home.Home, string, error) {
		t.Helper()
		h, _ := testHome(t)
		n, err := New(Config{Home: h, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, APIAddr: apiAddr, NoWatcher: true, NoDHT: true})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- n.Run(ctx) }()
		select {
		case err := <-done:
			cancel()
			return h, "", err
		case <-n.Ready():
		}
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("node run: %v", err)
			}
		})
		return h, h.Dir, nil
	}

	h, homeDir, err := start("") // the default
	if err != nil {
		t.Fatal(err)
	}
	info, err := h.ReadAPIInfo()
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(info.Addr)
	if err != nil || host != "127.0.0.1" || port == "0" || len(info.Token) < 32 {
		t.Fatalf("API info %+v: want 127.0.0.1, a port the OS picked, a random token", info)
	}
	fi, err := os.Stat(filepath.Join(homeDir, "api.json"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("api.json has mode %v, want 0600", fi.Mode().Perm())
	}

	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:0"} {
		if _, _, err := start(addr); err == nil {
			t.Errorf("API address %s: the node started, want it refused", addr)
		}
	}
}

// TestAuditOversizeFrameOnEachProtocol sends a frame length far over the
// limit on each stream protocol (after the Hello where there is one): the
// node ends the stream having sent nothing but its Hello, and still answers
// a well-behaved stream afterwards.
func TestAuditOversizeFrameOnEachProtocol(t *testing.T) {
	n, _ := testNodeWith(t, Config{NoWatcher: true})
	h, _ := joinAsMember(t, n)
	v := n.vaultsNow()[0]
	hostile := append(binary.AppendUvarint(nil, 1<<40), 0x10, 1, 2, 3)
	for _, tt := range []struct {
		proto protocol.ID
		hello bool
	}{{ProtoLog, true}, {ProtoChunk, true}, {ProtoPair, false}} {
		t.Run(string(tt.proto), func(t *testing.T) {
			s, err := h.NewStream(context.Background(), n.host.ID(), tt.proto)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Reset()
			if tt.hello {
				if err := wire.WriteFrame(s, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: v.id}.AppendBinary(nil)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Write(hostile); err != nil {
				t.Fatal(err)
			}
			var got []wire.MsgType
			_ = s.SetReadDeadline(time.Now().Add(30 * time.Second))
			for {
				mt, _, err := wire.ReadFrame(s, wire.MaxFrameSize)
				if err != nil {
					if os.IsTimeout(err) {
						t.Fatalf("the node kept the stream open after an oversize frame")
					}
					break
				}
				got = append(got, mt)
			}
			want := 0
			if tt.hello {
				want = 1
			}
			if len(got) != want || (want == 1 && got[0] != wire.MsgHello) {
				t.Fatalf("got %v, want only the node's Hello (if any) and then the end of the stream", got)
			}
		})
	}
	// Still served: a chunk stream answers its Hello.
	s, err := h.NewStream(context.Background(), n.host.ID(), ProtoChunk)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Reset()
	_ = wire.WriteFrame(s, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: v.id}.AppendBinary(nil))
	if mt, _ := auditReadFrame(t, s); mt != wire.MsgHello {
		t.Fatalf("after the hostile streams: got %s, want Hello", mt)
	}
}

// openLogStream opens a log stream from h to n for vault v and sends the
// Hello and an empty LogRequest (everything, from the start); the stream
// is reset when the test ends.
func openLogStream(t *testing.T, h host.Host, n *Node, v *vault) network.Stream {
	t.Helper()
	s, err := h.NewStream(context.Background(), n.host.ID(), ProtoLog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Reset() })
	if err := wire.WriteFrame(s, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: v.id}.AppendBinary(nil)); err != nil {
		t.Fatal(err)
	}
	if err := wire.WriteFrame(s, wire.MsgLogRequest, wire.LogRequest{}.AppendBinary(nil)); err != nil {
		t.Fatal(err)
	}
	return s
}
