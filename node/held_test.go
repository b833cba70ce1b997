package node

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/wire"
)

// TestStatusReportsOnlyContentHeld checks that a device's LogStatus counts
// an entry as held only once it also holds the entry's file content: a
// peer that wrote a large file must not think it safe while its chunks
// exist nowhere else.
func TestStatusReportsOnlyContentHeld(t *testing.T) {
	n, _ := testNode(t)
	h, id := joinAsMember(t, n)
	v := n.vaultsNow()[0]
	data := make([]byte, 100<<10)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	s, err := chunk.Seal(v.ck, data)
	if err != nil {
		t.Fatal(err)
	}
	sum := blake3.Sum256(data)
	body := &entry.Body{Versions: []entry.Version{{Path: "big.bin", Kind: entry.KindFile, Mode: 0o644, MTime: 1e18,
		Size: uint64(len(data)), Hash: sum, Chunks: []entry.ChunkRef{{CID: s.CID, Size: uint32(len(data))}}}}}
	e, err := entry.New(entry.Config{Identity: id, Vault: v.id, Clock: 1, Keys: v.ek, Time: 1, Rand: rand.Reader}, body)
	if err != nil {
		t.Fatal(err)
	}
	// The member serves its log but never its chunks (no chunk handler).
	serveLog(h, v.id, []*entry.Entry{e}, nil)
	connectHost(t, h, n)
	deadline := time.Now().Add(20 * time.Second)
	for v.db.Head(id.ID()).Seq != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the node never stored the member's entry")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Ask the node for its status as the member would.
	st, err := h.NewStream(context.Background(), n.host.ID(), ProtoLog)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_ = wire.WriteFrame(st, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: v.id}.AppendBinary(nil))
	_ = wire.WriteFrame(st, wire.MsgLogRequest, wire.LogRequest{Vector: []wire.VectorEntry{{Author: id.ID(), Seq: 1}}}.AppendBinary(nil))
	_ = st.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		mt, p, err := wire.ReadFrame(st, wire.MaxFrameSize)
		if err != nil {
			t.Fatalf("no LogStatus: %v", err)
		}
		if mt != wire.MsgLogStatus {
			continue
		}
		ls, err := wire.ParseLogStatus(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, ve := range ls.Vector {
			if ve.Author == id.ID() && ve.Seq != 0 {
				t.Fatalf("status says the node holds the member's entry %d, but it has none of its chunks", ve.Seq)
			}
		}
		return
	}
}
