package node

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"testing"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/ownlog"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

func testIdentity(t *testing.T, seed byte) *keys.Identity {
	t.Helper()
	id, err := keys.IdentityFromSeed(bytes.Repeat([]byte{seed}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// ownChain builds n entries of id's log after prev.
func ownChain(t *testing.T, id *keys.Identity, root keys.RootSecret, prev entry.Head, n int) []*entry.Entry {
	t.Helper()
	var out []*entry.Entry
	for i := range n {
		content := []byte{byte(prev.Seq), byte(i)}
		body := &entry.Body{Versions: []entry.Version{{Path: "f.txt", Kind: entry.KindFile, Mode: 0o644,
			Size: uint64(len(content)), Hash: blake3.Sum256(content), Inline: content}}}
		e, err := entry.New(entry.Config{Identity: id, Vault: root.Vault().ID, Prev: prev, Clock: prev.Clock + 1,
			Keys: root.Epoch0().Keys(0), Time: 1_790_000_000_000, Rand: rand.Reader}, body)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
		prev = e.Head()
	}
	return out
}

func raws(es []*entry.Entry) [][]byte {
	var out [][]byte
	for _, e := range es {
		out = append(out, e.Bytes())
	}
	return out
}

// Taking back one's own log tail from a peer accepts only entries signed
// by this device's key that chain onto the head held here.
func TestVerifyOwnTail(t *testing.T) {
	var root keys.RootSecret
	for i := range root {
		root[i] = byte(i)
	}
	vault := root.Vault().ID
	self, other := testIdentity(t, 1), testIdentity(t, 2)
	held := ownChain(t, self, root, entry.Head{}, 3)
	head := held[2].Head()
	tail := ownChain(t, self, root, head, 3)
	// The same sequence numbers written again from an older head: what a
	// restored device would have signed before this gate.
	forked := ownChain(t, self, root, held[1].Head(), 2)
	foreign := ownChain(t, other, root, head, 1)
	badSig := bytes.Clone(tail[0].Bytes())
	badSig[len(badSig)-5] ^= 0x40 // inside the signature, the encoding's last field

	tests := []struct {
		name string
		raws [][]byte
		want error // nil: accepted
	}{
		{"own tail chaining onto head", raws(tail), nil},
		{"nothing", nil, nil},
		{"signed by another device", raws(foreign), ownlog.ErrNotOwnEntry},
		{"signature altered", [][]byte{badSig}, entry.ErrBadSignature},
		{"a gap after head", raws(tail[1:]), entry.ErrSeqGap},
		{"out of order", [][]byte{tail[1].Bytes(), tail[0].Bytes()}, entry.ErrSeqGap},
		{"not chaining onto head", raws(forked[1:]), entry.ErrPrevMismatch},
		{"at or below head", raws(forked[:1]), entry.ErrSeqReplay},
		{"already held", raws(held[2:]), entry.ErrDuplicate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ownlog.VerifyTail(vault, self.ID(), head, tt.raws)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("got %v, want accepted", err)
				}
				if len(got) != len(tt.raws) {
					t.Fatalf("got %d entries, want %d", len(got), len(tt.raws))
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if got != nil {
				t.Fatalf("got %d entries with the error, want none", len(got))
			}
		})
	}
	t.Run("another vault", func(t *testing.T) {
		var other keys.RootSecret
		other[0] = 0xff
		if _, err := ownlog.VerifyTail(other.Vault().ID, self.ID(), head, raws(tail)); !errors.Is(err, entry.ErrWrongVault) {
			t.Fatalf("got %v, want %v", err, entry.ErrWrongVault)
		}
	})
}

// A peer sending this device's own entries back: those that chain onto
// the head are stored as its own and counted as taken back; one that does
// not (the same sequence number signed over a different history) is
// refused and reported as a fork of the own log, never stored.
func TestIngestOwnTail(t *testing.T) {
	h, _ := testHome(t)
	n, err := New(Config{Home: h, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, APIAddr: "-",
		NoWatcher: true, NoDHT: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		n.closeVaults()
		n.host.Close()
	}()
	v := n.vaultsNow()[0]
	self := n.ID()
	events, stop := n.Subscribe()
	defer stop()
	build := func(prev entry.Head, content string) *entry.Entry {
		t.Helper()
		c := []byte(content)
		body := &entry.Body{Versions: []entry.Version{{Path: "f.txt", Kind: entry.KindFile, Mode: 0o644,
			Size: uint64(len(c)), Hash: blake3.Sum256(c), Inline: c}}}
		e, err := entry.New(entry.Config{Identity: n.id, Vault: v.id, Prev: prev, Clock: prev.Clock + 1,
			Keys: v.crypt.WriteKeys(), Time: 1_790_000_000_000, Rand: rand.Reader}, body)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e1 := build(entry.Head{}, "one")
	e2 := build(e1.Head(), "two")
	other := build(entry.Head{}, "one, written over again") // seq 1 again

	for _, e := range []*entry.Entry{e1, e2} {
		if err := v.ingestEntry(e.Bytes(), nil); err != nil {
			t.Fatalf("taking back own seq %d: %v", e.Seq(), err)
		}
	}
	if got := v.db.Head(self); got.Seq != 2 || !got.CID.Equals(e2.CID()) {
		t.Fatalf("head %d %s, want 2 %s", got.Seq, got.CID, e2.CID())
	}
	if took, from := v.tail.Took(); took != 2 || from != 1 {
		t.Fatalf("took back %d from %d, want 2 from 1", took, from)
	}

	// The other seq 1, sent again: held differs, reported once.
	if err := v.ingestEntry(other.Bytes(), nil); err != nil {
		t.Fatalf("a held seq sent again: %v", err)
	}
	if _, _, forked := v.tail.Fork(); !forked {
		t.Fatal("a different entry at a held seq of the own log not reported")
	}
	if got, err := v.db.Get(self, 1); err != nil || !got.CID().Equals(e1.CID()) {
		t.Fatalf("held seq 1 after the fork: %v, %v", got, err)
	}
	var sawFork bool
	for len(events) > 0 {
		ev := <-events
		sawFork = sawFork || ev.Type == api.EventError && ev.Kind == eventKindOwnLogForked
	}
	if !sawFork {
		t.Fatal("no own-log-forked event")
	}

	// Seq 3 of the other history links to its own seq 2, not to the
	// head held here: refused.
	stray := build(build(other.Head(), "two, on the other history").Head(), "three, on the other history")
	if err := v.ingestEntry(stray.Bytes(), nil); !errors.Is(err, entry.ErrPrevMismatch) {
		t.Fatalf("an own entry not chaining onto the head: got %v, want %v", err, entry.ErrPrevMismatch)
	}
	if got := v.db.Head(self).Seq; got != 2 {
		t.Fatalf("head moved to %d on a refused entry", got)
	}
}
