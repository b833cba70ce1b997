package relay

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// noteEntry is a one-note entry of id's log after prev.
func noteEntry(t *testing.T, id *keys.Identity, x *testVault, prev entry.Head, name string) *entry.Entry {
	t.Helper()
	data := []byte("note " + name)
	e, err := entry.New(entry.Config{Identity: id, Vault: x.id, Prev: prev, Clock: prev.Clock + 1, Keys: x.ek,
		Time: int64(prev.Seq + 1), Rand: rand.Reader},
		&entry.Body{Versions: []entry.Version{{Path: name, Kind: entry.KindFile, Mode: 0o644,
			MTime: 1, Size: uint64(len(data)), Hash: blake3.Sum256(data), Inline: data}}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestRelayDoesNotPushAnAuthorsOwnEntryBack: an entry the relay got from
// its author (its pull from that device) after the device's log stream
// asked is not pushed back down that stream, however the two race (the
// relay notes the sender before it signals growth); another member's
// entry stored next is. A stream opened afterwards that asks for the
// author's own entries (a device restarted from an older copy of its
// home) gets them.
func TestRelayDoesNotPushAnAuthorsOwnEntryBack(t *testing.T) {
	lab := newMemberLab(t) // m never connects: its entry reaches the relay below
	r, a, m, x, rep := lab.r, lab.a, lab.m, lab.x, lab.rep

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := a.h.NewStream(ctx, r.ID(), ProtoLog)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := s.Write(append(hello(t, x.id), frame(t, wire.MsgLogRequest, wire.LogRequest{MemberSeq: 3})...)); err != nil {
		t.Fatal(err)
	}
	// nextEntry reads frames until an entry and returns it.
	nextEntry := func() *entry.Entry {
		t.Helper()
		for {
			if mt, p := readLogFrame(t, s); mt == wire.MsgEntry {
				e, err := entry.Decode(p)
				if err != nil {
					t.Fatal(err)
				}
				return e
			}
		}
	}

	own := noteEntry(t, a.id, x, entry.Head{}, "a.md")
	if err := rep.ingestEntryFrom(own.Bytes(), a.id.ID()); err != nil {
		t.Fatal(err)
	}
	other := noteEntry(t, m.id, x, entry.Head{}, "m.md")
	if err := rep.ingestEntry(other.Bytes()); err != nil {
		t.Fatal(err)
	}
	if e := nextEntry(); e.Author() != m.id.ID() {
		t.Fatalf("the relay pushed %s's entry %d down its own stream, before the other member's", e.Author().Short(), e.Seq())
	}

	// A device that asks for its own entry back gets it.
	got := readLog(t, a, r, x.id, wire.LogRequest{MemberSeq: 3})
	var mine int
	for _, e := range got.entries {
		if e.Author() == a.id.ID() {
			mine++
		}
	}
	if mine != 1 {
		t.Fatalf("a stream asking for the author's own entries got %d of them, want 1", mine)
	}
	close(lab.release)
}
