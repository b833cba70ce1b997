package node

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/internal/netsync"
	"github.com/weftsync/weft/internal/testbytes"
	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/wire"
)

// frameSink is a wire.Conn's far end that keeps what is written and
// refuses writes once failAfter bytes are in (0: never).
type frameSink struct {
	bytes.Buffer
	failAfter int
}

var errSinkFull = errors.New("sink full")

func (s *frameSink) Write(p []byte) (int, error) {
	if s.failAfter > 0 && s.Len()+len(p) > s.failAfter {
		return 0, errSinkFull
	}
	return s.Buffer.Write(p)
}

func (s *frameSink) Read([]byte) (int, error) { return 0, io.EOF }

// withWorkers is cs making chunks on n workers.
func withWorkers(cs netsync.ChunkServer, n int) netsync.ChunkServer {
	cs.Workers = n
	return cs
}

// servedAnswers parses a chunk server's output: per CID, the envelope or nil
// for ChunkMissing, checking the answers come in request order.
func servedAnswers(t *testing.T, out []byte, cids []cid.Cid) [][]byte {
	t.Helper()
	r := bytes.NewReader(out)
	got := make([][]byte, len(cids))
	for i, c := range cids {
		mt, p, err := wire.ReadFrame(r, wire.MaxFrameSize)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		switch mt {
		case wire.MsgChunk:
			ch, err := wire.ParseChunk(p)
			if err != nil {
				t.Fatal(err)
			}
			if !ch.CID.Equals(c) {
				t.Fatalf("answer %d is %s, want %s (answers in request order)", i, ch.CID, c)
			}
			got[i] = ch.Envelope
		case wire.MsgChunkMissing:
			m, err := wire.ParseChunkMissing(p)
			if err != nil {
				t.Fatal(err)
			}
			if !m.CID.Equals(c) {
				t.Fatalf("answer %d says %s is missing, want an answer for %s", i, m.CID, c)
			}
		default:
			t.Fatalf("answer %d: got %s", i, mt)
		}
	}
	if r.Len() != 0 {
		t.Fatalf("%d bytes after the last answer", r.Len())
	}
	return got
}

// TestServeChunksOnWorkers serves a file's chunks, with unknown CIDs and
// repeats among them, on more workers than chunks in flight: every answer
// comes in request order and opens to the file's bytes at its place; once
// the file's content changes behind the index (same size, inode and
// mtime), nothing of it is served; a failing stream stops the workers
// with its error.
func TestServeChunksOnWorkers(t *testing.T) {
	n, folderPath := testNodeWith(t, Config{NoWatcher: true})
	if _, err := n.API().SetVersionPolicy(context.Background(), folderPath, api.VersionPolicy{Off: true}); err != nil {
		t.Fatal(err)
	}
	v := n.vaultsNow()[0]
	data := testbytes.Seeded(11, 3<<20)
	auditWriteScanned(t, n, folderPath, "big.bin", data)
	v.mu.Lock()
	refs := v.index.Rec("big.bin").Chunks
	v.mu.Unlock()
	if len(refs) < 2*netsync.ServeAhead {
		t.Fatalf("big.bin has %d chunks, want over %d", len(refs), 2*netsync.ServeAhead)
	}
	var cids []cid.Cid
	var plain [][]byte
	off := 0
	for i, r := range refs {
		cids = append(cids, r.CID)
		plain = append(plain, data[off:off+int(r.Size)])
		off += int(r.Size)
		if i%5 == 0 {
			cids = append(cids, chunk.SumCID([]byte{byte(i)})) // held by no one
			plain = append(plain, nil)
		}
	}
	cids = append(cids, refs[0].CID) // asked twice
	plain = append(plain, plain[0])

	serve := func(sink *frameSink, workers int) error {
		f := wire.NewConn(sink, nil)
		if err := withWorkers(v.chunkServer(), workers).Send(f, cids); err != nil {
			return err
		}
		return f.Flush()
	}
	for _, workers := range []int{1, 4} {
		var sink frameSink
		if err := serve(&sink, workers); err != nil {
			t.Fatal(err)
		}
		for i, env := range servedAnswers(t, sink.Bytes(), cids) {
			if (env == nil) != (plain[i] == nil) {
				t.Fatalf("workers=%d answer %d: got served=%v, want %v", workers, i, env != nil, plain[i] != nil)
			}
			if env == nil {
				continue
			}
			got, err := v.crypt.OpenChunk(cids[i], env)
			if err != nil {
				t.Fatalf("workers=%d answer %d: %v", workers, i, err)
			}
			if !bytes.Equal(got, plain[i]) {
				t.Fatalf("workers=%d answer %d: plaintext differs from the file's", workers, i)
			}
		}
	}

	// The scan taught the vault each chunk's identity, so a chunk read
	// back to write another file is checked by hashing its plaintext.
	off = 0
	for i, r := range refs {
		if _, ok := v.crypt.IDs().Get(r.CID); !ok {
			t.Fatalf("chunk %d: identity not known after the scan", i)
		}
		got, err := v.local.Plaintext(r.CID)
		if err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if !bytes.Equal(got, data[off:off+int(r.Size)]) {
			t.Fatalf("chunk %d: plaintext differs from the file's", i)
		}
		off += int(r.Size)
	}

	if err := serve(&frameSink{failAfter: 1 << 20}, 4); !errors.Is(err, errSinkFull) {
		t.Errorf("serving into a failing stream: got %v, want its error", err)
	}

	p := filepath.Join(folderPath, "big.bin")
	overwriteKeepingStat(t, p, 0, testbytes.Seeded(12, len(data)))
	var sink frameSink
	if err := serve(&sink, 4); err != nil {
		t.Fatal(err)
	}
	for i, env := range servedAnswers(t, sink.Bytes(), cids) {
		if env != nil {
			t.Fatalf("answer %d served from a file whose content changed since its scan", i)
		}
	}
	for i, r := range refs {
		if _, err := v.local.Plaintext(r.CID); err == nil {
			t.Fatalf("chunk %d re-created from a file whose content changed since its scan", i)
		}
	}
}
