package node

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"
	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// TestPeerExchangeIsOneCommit: a log stream that opens with the addresses
// of many members (peer exchange in a large vault) is remembered in one
// database commit, not one commit (and one fsync) per address, which held
// the stream's entries back by seconds in a 200-device vault. On the old
// code this test counts 200 commits more than now.
func TestPeerExchangeIsOneCommit(t *testing.T) {
	n, folderPath := testNode(t)
	h, id := joinAsMember(t, n)
	v := n.vaultsNow()[0]
	const many = 200
	var ps wire.Peers
	for i := range many {
		other, err := keys.GenerateIdentity(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.admit(other.ID(), ""); err != nil {
			t.Fatal(err)
		}
		ps.Peers = append(ps.Peers, wire.PeerAddrs{Device: other.ID(), Addrs: []string{fmt.Sprintf("/ip4/192.0.2.%d/tcp/4001", i%250+1)}})
	}
	slices.SortFunc(ps.Peers, func(a, b wire.PeerAddrs) int { return slices.Compare(a.Device[:], b.Device[:]) })
	data := []byte("after the addresses\n")
	body := &entry.Body{Versions: []entry.Version{{
		Path: "after.txt", Kind: entry.KindFile, Mode: 0o644, MTime: 1e18,
		Size: uint64(len(data)), Inline: data, Hash: blake3.Sum256(data),
	}}}
	e, err := entry.New(entry.Config{Identity: id, Vault: v.id, Clock: 1, Keys: v.ek, Time: 1, Rand: rand.Reader}, body)
	if err != nil {
		t.Fatal(err)
	}
	h.SetStreamHandler(ProtoLog, func(s network.Stream) {
		defer s.Close()
		if _, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil {
			return
		}
		_ = wire.WriteFrame(s, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: v.id}.AppendBinary(nil))
		if _, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil {
			return
		}
		_ = wire.WriteFrame(s, wire.MsgPeers, ps.AppendBinary(nil))
		_ = wire.WriteFrame(s, wire.MsgEntry, e.Bytes())
		_, _, _ = wire.ReadFrame(s, wire.MaxFrameSize) // until the node hangs up
	})
	before := v.db.Stats().Commits
	connectHost(t, h, n)
	waitFor(t, "after.txt", func() bool {
		b, err := os.ReadFile(filepath.Join(folderPath, "after.txt"))
		return err == nil && string(b) == string(data)
	})
	known := v.book.All()
	for _, p := range ps.Peers {
		if len(known[p.Device]) == 0 {
			t.Fatalf("got no address for %s, want %v", p.Device.Short(), p.Addrs)
		}
	}
	// Besides the addresses: the entry, the applied file's index record,
	// the peer's own address from identify, acknowledgements. Far fewer
	// than one per address.
	if got := v.db.Stats().Commits - before; got > 20 {
		t.Fatalf("got %d commits for %d addresses and one entry, want at most 20", got, many)
	}
}
