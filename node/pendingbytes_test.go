package node

import (
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
)

// While a pass fetches a file, status says how many bytes it still
// writes; once the pass is over, none. The peer holds the chunk stream
// open without answering until the test has seen it.
func TestStatusSaysPendingBytes(t *testing.T) {
	n, _ := testNodeWith(t, Config{NoWatcher: true, NoScrub: true})
	v := n.vaultsNow()[0]
	h, id := joinAsMember(t, n)
	data := make([]byte, 100<<10)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	e, err := entry.New(entry.Config{Identity: id, Vault: v.id, Clock: 50, Keys: v.ek, Time: 1, Rand: rand.Reader},
		&entry.Body{Versions: []entry.Version{{Path: "big.bin", Kind: entry.KindFile, Mode: 0o644, MTime: 1,
			Size: uint64(len(data)), Hash: blake3.Sum256(data), Chunks: []entry.ChunkRef{{CID: chunk.SumCID(data), Size: uint32(len(data))}}}}})
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{}, 1)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	h.SetStreamHandler(ProtoChunk, func(s network.Stream) {
		select {
		case asked <- struct{}{}:
		default:
		}
		<-release
		_ = s.Reset()
	})
	serveLog(h, v.id, []*entry.Entry{e}, nil)
	connectHost(t, h, n)
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the file's chunk was never asked for")
	}
	if got := n.Status().Folders[0].PendingBytes; got != int64(len(data)) {
		t.Errorf("pending bytes while the file is fetched: %d, want %d", got, len(data))
	}
	free()
	waitFor(t, "the pass to end", func() bool { return n.Status().Folders[0].PendingBytes == 0 })
}
