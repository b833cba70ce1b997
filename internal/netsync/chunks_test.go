package netsync

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// pipeStream is one end of an in-memory stream; Reset closes it.
type pipeStream struct{ net.Conn }

func (p pipeStream) Reset() error { return p.Close() }

// pipe returns both ends of an in-memory stream, each with its Conn.
func pipe(t *testing.T) (a, b pipeStream, ca, cb *wire.Conn) {
	t.Helper()
	x, y := net.Pipe()
	t.Cleanup(func() { x.Close(); y.Close() })
	a, b = pipeStream{x}, pipeStream{y}
	return a, b, wire.NewConn(a, nil), wire.NewConn(b, nil)
}

func ids(n int) []cid.Cid {
	out := make([]cid.Cid, n)
	for i := range out {
		out[i] = chunk.SumCID([]byte(fmt.Sprint("chunk ", i)))
	}
	return out
}

// store serves the chunks it holds (the envelope is the CID's bytes, so a
// test can tell them apart) and counts what it makes.
type store struct {
	held map[cid.Cid]bool
	mu   sync.Mutex
	made int
}

func (s *store) make(dst []byte, id cid.Cid, scratch []byte) ([]byte, []byte, error) {
	s.mu.Lock()
	s.made++
	s.mu.Unlock()
	if !s.held[id] {
		return dst, scratch, errors.New("not held")
	}
	return append(dst, id.Bytes()...), scratch, nil
}

// TestFetchFromServer: a fetch of more CIDs than one batch, some not
// held, from a server on several workers: every held chunk arrives once
// with its envelope, the rest come back missing, in request order. Lent,
// every envelope lies in the one buffer the fetch reads into.
func TestFetchFromServer(t *testing.T) {
	t.Run("own", func(t *testing.T) { testFetchFromServer(t, false) })
	t.Run("lent", func(t *testing.T) { testFetchFromServer(t, true) })
}

func testFetchFromServer(t *testing.T, lent bool) {
	want := ids(3*FetchBatch + 7)
	st := &store{held: map[cid.Cid]bool{}}
	for i, id := range want {
		if i%3 != 0 {
			st.held[id] = true
		}
	}
	a, _, ca, cb := pipe(t)
	served := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		ChunkServer{Make: st.make, Workers: 4, Served: func() { served++ }}.Serve(cb, nil)
	}()
	got := map[cid.Cid][]byte{}
	fetch := FetchChunks
	if lent {
		fetch = FetchChunksLent
	}
	arrays := map[*byte]bool{} // the last byte of each envelope's array
	missing, err := fetch(a, ca, want, 5*time.Second, func(id cid.Cid, env []byte) error {
		if _, dup := got[id]; dup {
			t.Errorf("%s delivered twice", id)
		}
		got[id] = slices.Clone(env)
		arrays[&env[:cap(env)][cap(env)-1]] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	<-done
	var wantMissing []cid.Cid
	for _, id := range want {
		if !st.held[id] {
			wantMissing = append(wantMissing, id)
			continue
		}
		if env, ok := got[id]; !ok || string(env) != string(id.Bytes()) {
			t.Errorf("%s: got %x (delivered %v), want its envelope", id, env, ok)
		}
	}
	if !slices.Equal(missing, wantMissing) {
		t.Errorf("missing: got %d CIDs, want the %d not held, in request order", len(missing), len(wantMissing))
	}
	if served != len(got) || st.made != len(want) {
		t.Errorf("served %d and made %d, want %d and %d", served, st.made, len(got), len(want))
	}
	if lent && len(arrays) != 1 || !lent && len(arrays) != len(got) {
		t.Errorf("%d envelopes in %d arrays, want lent ones in one, own ones in one each", len(got), len(arrays))
	}
}

// answerer reads the want batches on c and answers with script's frames.
func answerer(c *wire.Conn, script func(want []cid.Cid) error) chan error {
	errc := make(chan error, 1)
	go func() {
		p, err := c.ExpectLimit(wire.MsgWantChunks, wire.MaxWantChunksFrame)
		if err != nil {
			errc <- err
			return
		}
		w, err := wire.ParseWantChunks(p)
		if err != nil {
			errc <- err
			return
		}
		err = script(w.CIDs)
		if err == nil {
			err = c.Flush()
		}
		errc <- err
	}()
	return errc
}

// TestFetchRefusesWhatWasNotAsked: a chunk that was not asked for ends
// the fetch with ErrUnexpected, and everything not answered comes back
// as missing with what was said missing before it.
func TestFetchRefusesWhatWasNotAsked(t *testing.T) {
	want := ids(4)
	stranger := chunk.SumCID([]byte("not asked"))
	a, _, ca, cb := pipe(t)
	answerer(cb, func([]cid.Cid) error {
		if err := cb.Send(wire.MsgChunkMissing, wire.ChunkMissing{CID: want[1]}); err != nil {
			return err
		}
		if err := cb.Send(wire.MsgChunk, wire.Chunk{CID: want[0], Envelope: []byte("a")}); err != nil {
			return err
		}
		return cb.Send(wire.MsgChunk, wire.Chunk{CID: stranger, Envelope: []byte("x")})
	})
	var got []cid.Cid
	missing, err := FetchChunks(a, ca, want, 5*time.Second, func(id cid.Cid, _ []byte) error {
		got = append(got, id)
		return nil
	})
	if !errors.Is(err, wire.ErrUnexpected) {
		t.Fatalf("err: got %v, want ErrUnexpected", err)
	}
	if !slices.Equal(got, want[:1]) || !slices.Equal(missing, []cid.Cid{want[1], want[2], want[3]}) {
		t.Errorf("got %v and missing %v, want %v and %v", got, missing, want[:1], want[1:])
	}
}

// TestFetchStopsWhenGotFails: got's error ends the fetch and is returned;
// the chunk got refused and those not delivered come back as missing.
func TestFetchStopsWhenGotFails(t *testing.T) {
	want := ids(5)
	st := &store{held: map[cid.Cid]bool{}}
	for _, id := range want {
		st.held[id] = true
	}
	a, _, ca, cb := pipe(t)
	go ChunkServer{Make: st.make, Workers: 2}.Serve(cb, nil)
	errFull := errors.New("quota full")
	n := 0
	missing, err := FetchChunks(a, ca, want, 5*time.Second, func(cid.Cid, []byte) error {
		if n++; n == 3 {
			return errFull
		}
		return nil
	})
	if !errors.Is(err, errFull) || !slices.Equal(missing, want[2:]) {
		t.Errorf("got %v, missing %v; want the quota error and %v", err, missing, want[2:])
	}
}

// TestServeRefusedMidStream: once allowed says no (a device revoked while
// its stream is open), the next batch is answered with a not-member
// Error, and nothing is made for it.
func TestServeRefusedMidStream(t *testing.T) {
	want := ids(2)
	st := &store{held: map[cid.Cid]bool{want[0]: true, want[1]: true}}
	a, _, ca, cb := pipe(t)
	allowed := true
	done := make(chan struct{})
	go func() {
		defer close(done)
		ChunkServer{Make: st.make, Workers: 1}.Serve(cb, func() bool { return allowed })
	}()
	if _, err := FetchChunks(a, ca, want[:1], 5*time.Second, func(cid.Cid, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	allowed = false // the server reads it only after the next batch arrives
	_, err := FetchChunks(a, ca, want[1:], 5*time.Second, func(cid.Cid, []byte) error { return nil })
	var we wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeNotMember {
		t.Fatalf("after the refusal: got %v, want a not-member Error", err)
	}
	<-done
	if st.made != 1 {
		t.Errorf("made %d chunks, want 1 (none after the refusal)", st.made)
	}
}

// TestOpenAndFetch: the Hello goes with the first want-list and the
// answerer's Hello is read before the first chunk, so every chunk arrives
// as after a separate Hello step; an answerer that refuses the Hello ends
// the fetch with its Error, every CID missing, and never serves the want
// sent behind the Hello.
func TestOpenAndFetch(t *testing.T) {
	vault := keys.VaultID{7}
	want := ids(2*FetchBatch + 3)
	st := &store{held: map[cid.Cid]bool{}}
	for _, id := range want {
		st.held[id] = true
	}
	for _, refuse := range []bool{false, true} {
		a, _, ca, cb := pipe(t)
		done := make(chan struct{})
		go func() {
			defer close(done)
			h, err := cb.ReadHello()
			if err != nil || h.Vault != vault {
				t.Errorf("answerer read Hello %+v, %v", h, err)
				return
			}
			if refuse {
				cb.SendError(wire.CodeNotMember, "not a member")
				return
			}
			// The first want-list is already on its way before the
			// answerer's Hello: an opener that waited for the Hello first
			// would never send it, and this read would fail.
			p, err := cb.ExpectLimit(wire.MsgWantChunks, wire.MaxWantChunksFrame)
			if err != nil {
				t.Errorf("the want-list did not come with the Hello: %v", err)
				return
			}
			first, err := wire.ParseWantChunks(p)
			if err != nil {
				t.Error(err)
				return
			}
			if err := cb.AcceptHello(vault); err != nil {
				t.Error(err)
				return
			}
			if err := (ChunkServer{Make: st.make, Workers: 2}).Send(cb, first.CIDs); err != nil {
				t.Error(err)
				return
			}
			if err := cb.Flush(); err != nil {
				t.Error(err)
				return
			}
			ChunkServer{Make: st.make, Workers: 2}.Serve(cb, nil)
		}()
		var got []cid.Cid
		missing, err := OpenAndFetch(a, ca, vault, want, time.Minute, true, func(id cid.Cid, env []byte) error {
			if string(env) != string(id.Bytes()) {
				return fmt.Errorf("chunk %s: wrong envelope", id)
			}
			got = append(got, id)
			return nil
		})
		a.Close()
		<-done
		switch {
		case refuse && (err == nil || len(got) != 0 || len(missing) != len(want)):
			t.Errorf("refused Hello: err %v, %d chunks, %d missing; want an error, none, all", err, len(got), len(missing))
		case !refuse && (err != nil || !slices.Equal(got, want) || len(missing) != 0):
			t.Errorf("accepted Hello: err %v, %d of %d chunks, %d missing", err, len(got), len(want), len(missing))
		}
	}
	if st.made != len(want) {
		t.Errorf("the store made %d chunks, want %d (none for the refused fetch)", st.made, len(want))
	}
}
