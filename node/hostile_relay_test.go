package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"lukechampine.com/blake3"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/claims"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/logview"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
	"github.com/weftsync/weft/relay"
)

// A hostile relay, faked: a libp2p host with a fresh key that the vault
// lists as its relay (so the device dials it, enrolls, pulls its log and
// fetches chunks from it) and that answers with crafted content. Each test
// checks that the device refuses what is wrong, writes nothing corrupted,
// and says so (docs/security.md, "What a relay can do, and what devices
// detect").

// fakeRelay answers /weft/relay/1 with a RelayStatus, /weft/log/1 with
// whatever serve writes, and /weft/chunk/1 from chunks.
type fakeRelay struct {
	h     host.Host
	dev   keys.DeviceID
	vault keys.VaultID
	// serve answers the n-th log stream (n from 1) after the opener's
	// Hello and LogRequest; the stream closes when it returns.
	serve   func(n int, s network.Stream, req wire.LogRequest)
	streams atomic.Int32

	mu     sync.Mutex // guards chunks
	chunks map[cid.Cid][]byte
}

// newFakeRelay starts a fake relay and records it as the relay of n's
// vault; the node dials it within a second.
func newFakeRelay(t *testing.T, n *Node, serve func(int, network.Stream, wire.LogRequest)) *fakeRelay {
	t.Helper()
	h, id := outsiderHost(t)
	v := n.vaultsNow()[0]
	f := &fakeRelay{h: h, dev: id.ID(), vault: v.id, serve: serve, chunks: map[cid.Cid][]byte{}}
	h.SetStreamHandler(relay.ProtoRelay, f.handleEnroll)
	h.SetStreamHandler(ProtoLog, f.handleLog)
	h.SetStreamHandler(ProtoChunk, func(s network.Stream) {
		serveChunks(s, f.vault, func(c cid.Cid) ([]byte, bool) {
			f.mu.Lock()
			defer f.mu.Unlock()
			env, ok := f.chunks[c]
			return env, ok
		})
	})
	addr := fmt.Sprintf("%s/p2p/%s", h.Addrs()[0], h.ID())
	if err := n.API().ChangeRelay(v.id, addr, false); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fakeRelay) setChunk(c cid.Cid, env []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.chunks[c] = env
}

func (f *fakeRelay) handleEnroll(s network.Stream) {
	defer s.Close()
	_ = s.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil {
		return
	}
	_ = wire.WriteFrame(s, wire.MsgRelayStatus, wire.RelayStatus{Vault: f.vault}.AppendBinary(nil))
}

func (f *fakeRelay) handleLog(s network.Stream) {
	defer s.Close()
	_ = s.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil {
		return
	}
	_ = wire.WriteFrame(s, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: f.vault}.AppendBinary(nil))
	_, p, err := wire.ReadFrame(s, wire.MaxFrameSize)
	if err != nil {
		return
	}
	req, err := wire.ParseLogRequest(p)
	if err != nil {
		return
	}
	_ = s.SetReadDeadline(time.Time{})
	f.serve(int(f.streams.Add(1)), s, req)
}

// serveChunks answers one chunk stream from get.
func serveChunks(s network.Stream, vault keys.VaultID, get func(cid.Cid) ([]byte, bool)) {
	defer s.Close()
	if _, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil {
		return
	}
	_ = wire.WriteFrame(s, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: vault}.AppendBinary(nil))
	for {
		mt, p, err := wire.ReadFrame(s, wire.MaxFrameSize)
		if err != nil || mt != wire.MsgWantChunks {
			return
		}
		want, err := wire.ParseWantChunks(p)
		if err != nil {
			return
		}
		for _, c := range want.CIDs {
			if env, ok := get(c); ok {
				err = wire.WriteFrame(s, wire.MsgChunk, wire.Chunk{CID: c, Envelope: env}.AppendBinary(nil))
			} else {
				err = wire.WriteFrame(s, wire.MsgChunkMissing, wire.ChunkMissing{CID: c}.AppendBinary(nil))
			}
			if err != nil {
				return
			}
		}
	}
}

// holdOpen keeps a log stream open until the node hangs up.
func holdOpen(s network.Stream) {
	for {
		if _, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil {
			return
		}
	}
}

func sendEntries(s network.Stream, es ...[]byte) {
	for _, e := range es {
		_ = wire.WriteFrame(s, wire.MsgEntry, e)
	}
}

func sendStatus(s network.Stream, vec protocol.Vector) {
	_ = wire.WriteFrame(s, wire.MsgLogStatus, wire.LogRequest{Vector: vectorToWire(vec)}.AppendBinary(nil))
}

// eventLog records a node's events from the start of a test.
type eventLog struct {
	mu  sync.Mutex
	evs []api.Event
}

func recordEvents(t *testing.T, n *Node) *eventLog {
	c, stop := n.Subscribe()
	l := &eventLog{}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case ev := <-c:
				l.mu.Lock()
				l.evs = append(l.evs, ev)
				l.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		stop()
		close(quit)
		<-done
	})
	return l
}

// find returns the first recorded event that matches.
func (l *eventLog) find(match func(api.Event) bool) (api.Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range l.evs {
		if match(ev) {
			return ev, true
		}
	}
	return api.Event{}, false
}

func (l *eventLog) count(match func(api.Event) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.evs {
		if match(ev) {
			n++
		}
	}
	return n
}

// waitFor polls cond until it holds, failing after a generous deadline.
// Nothing here depends on how fast it becomes true.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// memberLog writes n entries by id, entry i carrying file f<i>.txt inline.
func memberLog(t *testing.T, v *vault, id *keys.Identity, n int) []*entry.Entry {
	t.Helper()
	var out []*entry.Entry
	var prev entry.Head
	for i := range n {
		data := []byte(fmt.Sprintf("file %d\n", i+1))
		body := &entry.Body{Versions: []entry.Version{{
			Path: fmt.Sprintf("f%d.txt", i+1), Kind: entry.KindFile, Mode: 0o644, MTime: 1e18,
			Size: uint64(len(data)), Inline: data, Hash: blake3.Sum256(data),
		}}}
		e, err := entry.New(entry.Config{Identity: id, Vault: v.id, Prev: prev, Clock: uint64(i + 1), Keys: v.ek, Time: 1, Rand: rand.Reader}, body)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
		prev = e.Head()
	}
	return out
}

// fileIs reports whether p holds exactly want.
func fileIs(p string, want []byte) bool {
	b, err := os.ReadFile(p)
	return err == nil && bytes.Equal(b, want)
}

func absent(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s: got %v, want it absent", filepath.Base(p), err)
	}
}

// folderFiles lists the regular files in a folder, outside weft's own
// directories and its temp files.
func folderFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p == filepath.Join(root, folder.WorkDir) {
			return filepath.SkipDir // weft's own files (the folder marker), never synced
		}
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), folder.TempPrefix) {
			// A temp file is a write in progress (the vault retries a
			// failed path), removed when it fails: never a synced file.
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHostileRelay runs the fake hostile relay's attacks, each against a
// fresh device.
func TestHostileRelay(t *testing.T) {
	t.Run("alters a chunk", hostileAltersChunk)
	t.Run("alters an entry", hostileAltersEntry)
	t.Run("drops an entry", hostileDropsEntry)
	t.Run("replays entries", hostileReplaysEntry)
	t.Run("rolls back", hostileRollsBack)
}

// hostileAltersChunk: the relay serves envelopes that do not hash
// to their CIDs. The device refuses them, writes no file while only the
// relay is asked, reports the relay's bad chunk (a transfer-finished event
// with the error, an apply error, doctor's chunk-unavailable finding), and
// gets the right bytes from an honest member once one has them.
func hostileAltersChunk(t *testing.T) {
	n, folderPath := testNode(t)
	v := n.vaultsNow()[0]
	evs := recordEvents(t, n)
	mh, mid := joinAsMember(t, n)

	// Two chunks, so that the first fetch round asks the honest member for
	// one and the relay for the other (members first, then relays).
	parts := [][]byte{make([]byte, 40<<10), make([]byte, 40<<10)}
	var data []byte
	var refs []entry.ChunkRef
	good := map[cid.Cid][]byte{}
	for _, p := range parts {
		if _, err := rand.Read(p); err != nil {
			t.Fatal(err)
		}
		s, err := chunk.Seal(v.ck, p)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, p...)
		refs = append(refs, entry.ChunkRef{CID: s.CID, Size: uint32(len(p))})
		good[s.CID] = s.Envelope
	}
	e, err := entry.New(entry.Config{Identity: mid, Vault: v.id, Clock: 1, Keys: v.ek, Time: 1, Rand: rand.Reader},
		&entry.Body{Versions: []entry.Version{{Path: "photo.bin", Kind: entry.KindFile, Mode: 0o644, MTime: 1e18,
			Size: uint64(len(data)), Hash: blake3.Sum256(data), Chunks: refs}}})
	if err != nil {
		t.Fatal(err)
	}

	var honest atomic.Bool
	mh.SetStreamHandler(ProtoChunk, func(s network.Stream) {
		serveChunks(s, v.id, func(c cid.Cid) ([]byte, bool) {
			env, ok := good[c]
			return env, ok && honest.Load()
		})
	})
	connectHost(t, mh, n)
	f := newFakeRelay(t, n, func(_ int, s network.Stream, _ wire.LogRequest) {
		sendEntries(s, e.Bytes())
		sendStatus(s, protocol.Vector{mid.ID(): 1})
		holdOpen(s)
	})
	for c, env := range good {
		bad := bytes.Clone(env)
		bad[len(bad)/2] ^= 0x01
		f.setChunk(c, bad)
	}

	// Only the relay has the chunks (the member answers "missing").
	fromRelay := func(ev api.Event) bool {
		return ev.Type == api.EventTransferFinished && ev.Peer == f.dev.String() && strings.Contains(ev.Error, chunk.ErrCIDMismatch.Error())
	}
	applyFailed := func(ev api.Event) bool {
		return ev.Type == api.EventError && ev.Path == "photo.bin" && strings.Contains(ev.Error, chunk.ErrCIDMismatch.Error())
	}
	waitFor(t, "the relay's altered chunk to be refused and reported", func() bool {
		_, a := evs.find(fromRelay)
		_, b := evs.find(applyFailed)
		return a && b
	})
	absent(t, filepath.Join(folderPath, "photo.bin"))
	if got := folderFiles(t, folderPath); len(got) != 0 {
		t.Fatalf("files in the folder after refusing every chunk: got %v, want none", got)
	}
	d, err := n.API().Diagnose(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, fd := range d.Findings {
		found = found || (fd.Kind == "chunk-unavailable" && strings.Contains(fd.Message, "photo.bin") ||
			fd.Kind == "chunk-unavailable" && strings.Contains(fd.Path, "photo.bin"))
	}
	if !found {
		t.Fatalf("doctor findings: got %+v, want chunk-unavailable for photo.bin", d.Findings)
	}

	// An honest member now has the chunks: the right bytes arrive, even
	// though the relay keeps serving altered ones.
	honest.Store(true)
	p := filepath.Join(folderPath, "photo.bin")
	waitFor(t, "photo.bin from the honest member", func() bool { return fileIs(p, data) })
	if got := evs.count(fromRelay); got == 0 {
		t.Fatalf("transfer errors from the relay: got %d, want at least 1", got)
	}
}

// hostileAltersEntry: the relay flips a byte of the third of four
// entries (its signature no longer verifies). The device keeps the two
// before it, stores and applies nothing from the altered one on, and
// takes the stream down each time (it retries, and is refused again).
func hostileAltersEntry(t *testing.T) {
	n, folderPath := testNode(t)
	v := n.vaultsNow()[0]
	_, mid := joinAsMember(t, n)
	es := memberLog(t, v, mid, 4)
	flipped := bytes.Clone(es[2].Bytes())
	flipped[len(flipped)-1] ^= 0x01
	if _, err := entry.Validate(flipped, v.id, es[1].Head()); !errors.Is(err, entry.ErrBadSignature) {
		t.Fatalf("validating the altered entry: got %v, want %v", err, entry.ErrBadSignature)
	}
	f := newFakeRelay(t, n, func(_ int, s network.Stream, _ wire.LogRequest) {
		sendEntries(s, es[0].Bytes(), es[1].Bytes(), flipped, es[3].Bytes())
		sendStatus(s, protocol.Vector{mid.ID(): 4})
		holdOpen(s)
	})
	// The device ended the first stream on the altered entry and opened a
	// second: everything the first carried has been looked at.
	waitFor(t, "the device to refuse the altered entry and retry", func() bool { return f.streams.Load() >= 2 })
	waitFor(t, "f1.txt and f2.txt", func() bool {
		return fileIs(filepath.Join(folderPath, "f1.txt"), []byte("file 1\n")) &&
			fileIs(filepath.Join(folderPath, "f2.txt"), []byte("file 2\n"))
	})
	if got := v.db.Head(mid.ID()).Seq; got != 2 {
		t.Fatalf("stored head of the member: got %d, want 2", got)
	}
	v.mu.Lock()
	waiting := v.view.Ahead()
	v.mu.Unlock()
	if waiting != 0 {
		t.Fatalf("entries held back: got %d, want 0 (the stream ended at the altered entry)", waiting)
	}
	absent(t, filepath.Join(folderPath, "f3.txt"))
	absent(t, filepath.Join(folderPath, "f4.txt"))
	// The relay's claim to hold 4 entries never reached the device.
	claimed := v.peers.Of(f.dev)[mid.ID()]
	if claimed != 0 {
		t.Fatalf("what the relay holds of the member, as recorded: got %d, want 0", claimed)
	}
}

// hostileDropsEntry: the relay skips the third of four entries
// and claims to hold all four. The device holds the fourth back, applies
// nothing after the gap, says so (an "error" event of kind "withheld",
// once), and applies everything once an honest member sends the missing
// entry.
func hostileDropsEntry(t *testing.T) {
	n, folderPath := testNode(t)
	v := n.vaultsNow()[0]
	evs := recordEvents(t, n)
	mh, mid := joinAsMember(t, n)
	es := memberLog(t, v, mid, 4)
	f := newFakeRelay(t, n, func(i int, s network.Stream, _ wire.LogRequest) {
		sendEntries(s, es[0].Bytes(), es[1].Bytes(), es[3].Bytes())
		sendStatus(s, protocol.Vector{mid.ID(): 4})
		if i == 1 {
			return // the device reconnects and is told the same again
		}
		holdOpen(s)
	})
	withheld := func(ev api.Event) bool {
		return ev.Type == api.EventError && ev.Kind == claims.KindWithheld && ev.Peer == f.dev.String() && ev.Seq == 3
	}
	waitFor(t, "the gap to be reported", func() bool { _, ok := evs.find(withheld); return ok })
	waitFor(t, "a second stream from the relay", func() bool { return f.streams.Load() >= 2 })
	waitFor(t, "f1.txt and f2.txt", func() bool {
		return fileIs(filepath.Join(folderPath, "f1.txt"), []byte("file 1\n")) &&
			fileIs(filepath.Join(folderPath, "f2.txt"), []byte("file 2\n"))
	})
	ev, _ := evs.find(withheld)
	if !strings.Contains(ev.Error, "relay") || !strings.Contains(ev.Error, "entries 3 to 3") {
		t.Fatalf("withheld message: got %q, want it to name the relay and entries 3 to 3", ev.Error)
	}
	if got := v.db.Head(mid.ID()).Seq; got != 2 {
		t.Fatalf("stored head of the member: got %d, want 2", got)
	}
	v.mu.Lock()
	held := v.view.IsAhead(logview.EntryRef{Author: mid.ID(), Seq: 4})
	v.mu.Unlock()
	if !held {
		t.Fatalf("entry 4 is not held back")
	}
	absent(t, filepath.Join(folderPath, "f4.txt"))
	absent(t, filepath.Join(folderPath, "f3.txt"))

	// An honest member sends the missing entry: the gap fills.
	serveLog(mh, v.id, []*entry.Entry{es[2]}, nil)
	connectHost(t, mh, n)
	waitFor(t, "every file once the gap filled", func() bool {
		for i := range 4 {
			if !fileIs(filepath.Join(folderPath, fmt.Sprintf("f%d.txt", i+1)), []byte(fmt.Sprintf("file %d\n", i+1))) {
				return false
			}
		}
		return true
	})
	if got := evs.count(withheld); got != 1 {
		t.Fatalf("withheld reports for one gap over two streams: got %d, want 1", got)
	}
}

// hostileReplaysEntry: the relay sends entries the device already
// holds again, on the same stream and on a new one. Each replay is a
// no-op: the stream goes on (a new entry after the replays is taken), no
// error is reported, nothing is stored twice.
func hostileReplaysEntry(t *testing.T) {
	n, folderPath := testNode(t)
	v := n.vaultsNow()[0]
	evs := recordEvents(t, n)
	_, mid := joinAsMember(t, n)
	es := memberLog(t, v, mid, 4)
	next := make(chan struct{})
	f := newFakeRelay(t, n, func(i int, s network.Stream, req wire.LogRequest) {
		switch i {
		case 1:
			sendEntries(s, es[0].Bytes(), es[1].Bytes())
			sendStatus(s, protocol.Vector{mid.ID(): 2})
			sendEntries(s, es[0].Bytes(), es[1].Bytes(), es[0].Bytes()) // replayed
			sendEntries(s, es[2].Bytes())
			<-next
		default:
			sendEntries(s, es[0].Bytes(), es[2].Bytes(), es[3].Bytes()) // 1 and 3 replayed, 4 new
			sendStatus(s, protocol.Vector{mid.ID(): 4})
			holdOpen(s)
		}
	})
	waitFor(t, "entry 3 after the replays", func() bool { return v.db.Head(mid.ID()).Seq == 3 })
	if got := f.streams.Load(); got != 1 {
		t.Fatalf("log streams after replays on one stream: got %d, want 1", got)
	}
	close(next)
	waitFor(t, "entry 4 after replays on a new stream", func() bool { return v.db.Head(mid.ID()).Seq == 4 })
	waitFor(t, "f4.txt", func() bool { return fileIs(filepath.Join(folderPath, "f4.txt"), []byte("file 4\n")) })
	if ev, ok := evs.find(func(ev api.Event) bool { return ev.Type == api.EventError }); ok {
		t.Fatalf("error event after replays: got %+v, want none", ev)
	}
	n2 := 0
	if err := v.db.Range(mid.ID(), 1, 4, func(*entry.Entry) error { n2++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n2 != 4 {
		t.Fatalf("stored entries: got %d, want 4", n2)
	}
}

// hostileRollsBack: the relay says it holds all of this device's
// entries, then, on a later stream, one less, then none after a restart of
// the device. Each time the device says so (an "error" event of kind
// relay-rollback, a RelayRollbacks record, the durable mark lowered) and
// counts only what the relay now claims as safe there: `unsafe` goes back
// up. A relay that claims the entries again is counted again.
func hostileRollsBack(t *testing.T) {
	// No watcher: the scans below are the only writers, so the number of
	// this device's entries stays put while the relay's word changes.
	n, folderPath := testNodeWith(t, Config{NoWatcher: true})
	v := n.vaultsNow()[0]
	evs := recordEvents(t, n)
	self := n.id.ID()
	ctx := context.Background()
	for i := range 2 {
		if err := os.WriteFile(filepath.Join(folderPath, fmt.Sprintf("mine%d.txt", i)), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := v.scan(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	mine := v.db.Head(self).Seq
	if mine < 2 {
		t.Fatalf("own entries: got %d, want at least 2", mine)
	}
	steps := []protocol.Vector{
		{self: mine},     // holds all
		{self: mine - 1}, // rolled back by one
		{self: mine},     // claims all again
		{},               // after a restart of the device: rolled back to nothing
	}
	advance := make(chan struct{})
	f := newFakeRelay(t, n, func(i int, s network.Stream, _ wire.LogRequest) {
		if i > len(steps) {
			holdOpen(s)
			return
		}
		sendStatus(s, steps[i-1])
		<-advance
	})
	holds := func() uint64 {
		for _, r := range n.API().Relays() {
			if r.ID == f.h.ID().String() {
				return r.Holds
			}
		}
		return 0
	}
	rolledBack := func(ev api.Event) bool {
		return ev.Type == api.EventError && ev.Kind == claims.KindRollback && ev.Peer == f.dev.String()
	}
	acked := func() uint64 {
		a, err := v.db.Acked(f.dev)
		if err != nil {
			t.Fatal(err)
		}
		return a[self]
	}

	waitFor(t, "the relay's first status, recorded durably", func() bool { return acked() == mine })
	if got := v.unsafeCount(); got != 0 {
		t.Fatalf("unsafe: got %d, want 0", got)
	}
	if got := holds(); got != mine {
		t.Fatalf("relay holds: got %d, want %d", got, mine)
	}

	advance <- struct{}{}
	waitFor(t, "the rollback to be reported", func() bool { _, ok := evs.find(rolledBack); return ok })
	if got := v.unsafeCount(); got != 1 {
		t.Fatalf("unsafe after the relay went back by one: got %d, want 1", got)
	}
	if got := holds(); got != mine-1 {
		t.Fatalf("relay holds after the rollback: got %d, want %d", got, mine-1)
	}
	if got := acked(); got != mine-1 {
		t.Fatalf("durable mark after the rollback: got %d, want %d", got, mine-1)
	}
	ev, _ := evs.find(rolledBack)
	if !strings.Contains(ev.Error, "reported an older state than before: it may be faulty or malicious") {
		t.Fatalf("rollback message: got %q", ev.Error)
	}
	rbs := n.RelayRollbacks()
	if len(rbs) != 1 || rbs[0].Relay != f.dev.String() || rbs[0].Had != mine || rbs[0].Now != mine-1 || rbs[0].Author != self.String() {
		t.Fatalf("RelayRollbacks: got %+v, want one from %d to %d of this device's log", rbs, mine, mine-1)
	}

	advance <- struct{}{}
	waitFor(t, "the relay's renewed claim", func() bool { return acked() == mine })
	if got := v.unsafeCount(); got != 0 {
		t.Fatalf("unsafe after the relay claimed both again: got %d, want 0", got)
	}
	if got := evs.count(rolledBack); got != 1 {
		t.Fatalf("rollback reports after the relay grew again: got %d, want 1", got)
	}

	// A restart forgets what the relay said in memory; the durable mark
	// remains.
	v.peers.Forget(f.dev)
	advance <- struct{}{}
	waitFor(t, "the rollback after a restart", func() bool { return evs.count(rolledBack) == 2 })
	if got := v.unsafeCount(); got != mine {
		t.Fatalf("unsafe after the relay went back to nothing: got %d, want %d", got, mine)
	}
	if got := acked(); got != 0 {
		t.Fatalf("durable mark: got %d, want 0", got)
	}
	if rbs := n.RelayRollbacks(); len(rbs) != 1 || rbs[0].Had != mine || rbs[0].Now != 0 {
		t.Fatalf("RelayRollbacks: got %+v, want the latest, from %d to 0", rbs, mine)
	}
	close(advance)
}
