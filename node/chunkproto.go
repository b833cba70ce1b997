package node

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/internal/netsync"
	"github.com/weftsync/weft/node/content"
	"github.com/weftsync/weft/protocol/keys"
)

// The chunk protocol (/weft/chunk/1) is internal/netsync's, shared with
// the relay. A device serves chunks by re-creating them from its own
// files: it reads the plaintext where its index says the chunk lies,
// checks the file has not changed since it was scanned, seals it, and
// sends it only if the result has the wanted CID (localchunks.Source.AppendEnvelope),
// on every core (serving re-seals: about a third of a sender's CPU in B3).

// handleChunk answers a chunk stream while the opener stays a member or
// relay of the vault.
func (n *Node) handleChunk(s network.Stream) {
	defer s.Close()
	f, v, dev, ok := n.openStream(s)
	if !ok {
		return
	}
	_ = s.SetReadDeadline(time.Time{})
	v.chunkServer().Serve(f, func() bool { return v.isPeer(dev) })
}

// chunkServer serves this vault's chunks from the folder.
func (v *vault) chunkServer() netsync.ChunkServer {
	return netsync.ChunkServer{
		Make:    v.local.AppendEnvelope,
		Workers: runtime.GOMAXPROCS(0),
		Served:  func() { v.stats.chunksServed.Add(1) },
	}
}

// errChunkMissing means no peer asked had the chunk.
var errChunkMissing = content.ErrChunkMissing

// chunkIdle is how long a chunk stream may go without an answer.
const chunkIdle = 30 * time.Second

// helloTimeout bounds how long an opener may take to say who it is.
const helloTimeout = 10 * time.Second

// fetchChunks asks p for cids and calls got for each envelope that arrives
// and verifies against its CID. It returns the CIDs p did not have. got is
// called from this goroutine, in arrival order; if lent, the envelope is
// valid only until got returns (netsync.FetchChunksLent).
func (v *vault) fetchChunks(ctx context.Context, p peer.ID, dev keys.DeviceID, cids []cid.Cid, lent bool, got func(cid.Cid, []byte) error) (missing []cid.Cid, err error) {
	var gotBytes int64
	done := v.report.transfer(dev, len(cids))
	defer func() { done(len(cids)-len(missing), gotBytes, err) }()
	s, err := v.agent.newStream(ctx, p, ProtoChunk)
	if err != nil {
		return cids, fmt.Errorf("opening chunk stream: %w", err)
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	f := v.agent.outboundConn(s, dev)
	// The Hello goes with the first want-list: one round trip per fetch.
	return netsync.OpenAndFetch(s, f, v.id, cids, chunkIdle, lent, func(c cid.Cid, env []byte) error {
		if err := verifyBlob(c, env); err != nil {
			return fmt.Errorf("chunk from %s: %w", dev, err)
		}
		gotBytes += int64(len(env))
		v.stats.chunksFetched.Add(1)
		v.stats.chunkBytesFetched.Add(int64(len(env)))
		return got(c, env)
	})
}
