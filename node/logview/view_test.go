package logview

import (
	"bytes"
	"crypto/rand"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"testing"

	"lukechampine.com/blake3"

	"github.com/ipfs/go-cid"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// author writes entries of one test vault.
type author struct {
	t    *testing.T
	id   *keys.Identity
	keys keys.EpochKeys
	root keys.RootSecret
	prev entry.Head
}

func newAuthor(t *testing.T, root keys.RootSecret) *author {
	t.Helper()
	id, err := keys.GenerateIdentity(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &author{t: t, id: id, keys: root.Secrets().Epoch0().Keys(0), root: root}
}

func newRoot(t *testing.T) keys.RootSecret {
	t.Helper()
	root, err := keys.GenerateRootSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// next is the author's next entry: one inline file per content, named
// by its path.
func (a *author) next(clock uint64, files map[string]string) (*entry.Entry, *entry.Body) {
	a.t.Helper()
	body := &entry.Body{}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		b := []byte(files[p])
		body.Versions = append(body.Versions, entry.Version{Path: p, Kind: entry.KindFile, Mode: 0o644, MTime: 1e18,
			Size: uint64(len(b)), Inline: b, Hash: blake3.Sum256(b)})
	}
	return a.entry(clock, body), body
}

// entry is the author's next entry, carrying body.
func (a *author) entry(clock uint64, body *entry.Body) *entry.Entry {
	a.t.Helper()
	e, err := entry.New(entry.Config{Identity: a.id, Vault: a.root.Vault().ID, Prev: a.prev, Clock: clock, Keys: a.keys, Time: int64(clock) * 1000, Rand: rand.Reader}, body)
	if err != nil {
		a.t.Fatal(err)
	}
	a.prev = e.Head()
	return e
}

// TestBodyIsTheFoldedBody: a folded version's body, rebuilt from its
// graph version and what the graph lacks, is the body its entry carried
// (without inline bytes) for every kind, and only a chunked file and a
// symlink keep anything beside the graph.
func TestBodyIsTheFoldedBody(t *testing.T) {
	w := New(slog.New(slog.DiscardHandler))
	a := newAuthor(t, newRoot(t))
	e1, b1 := a.next(1, map[string]string{"gone.md": "x"})
	w.Fold(e1, b1, func(string) {})
	sum := blake3.Sum256([]byte("chunk"))
	c, err := cid.Cast(append([]byte{0x01, 0x55, 0x1e, 0x20}, sum[:]...))
	if err != nil {
		t.Fatal(err)
	}
	hello := []byte("hello")
	body := &entry.Body{Versions: []entry.Version{
		{Path: "note.md", Kind: entry.KindFile, Mode: 0o644, MTime: 5, Size: 5, Inline: hello, Hash: blake3.Sum256(hello)},
		{Path: "big.bin", Kind: entry.KindFile, Mode: 0o755, MTime: 6, Size: 3, Hash: [32]byte{1}, Chunks: []entry.ChunkRef{{CID: c, Size: 3}}},
		{Path: "dir", Kind: entry.KindDir, Mode: 0o755, MTime: 7},
		{Path: "link", Kind: entry.KindSymlink, MTime: 8, Size: 3, Target: "dir"},
		{Path: "gone.md", Kind: entry.KindDeletion, Mode: entry.DeletionConfirmed, Supersedes: []entry.VersionID{e1.VersionID(0)}},
	}}
	e2 := a.entry(2, body)
	w.Fold(e2, body, func(string) {})
	for i, want := range body.Versions {
		want.Inline = nil
		got, ok := w.Body(e2.VersionID(i))
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("body of %s: %v, %+v; want %+v", want.Path, ok, got, want)
		}
	}
	if len(w.rest) != 2 {
		t.Errorf("%d bodies kept beside the graph, want the chunked file's and the symlink's", len(w.rest))
	}
	if _, ok := w.Body(protocol.VersionID{Author: a.id.ID(), Seq: 9}); ok {
		t.Error("a body for a version never folded in")
	}
}

// TestFold: an entry's versions reach the graph and the bodies, their
// paths are touched, the clocks and the folded prefix move up, and inline
// bytes go to the cache (not the bodies), except while replaying.
func TestFold(t *testing.T) {
	w := New(slog.New(slog.DiscardHandler))
	a := newAuthor(t, newRoot(t))
	e, body := a.next(7, map[string]string{"a.md": "alpha", "b.md": "beta"})
	var touched []string
	w.Fold(e, body, func(p string) { touched = append(touched, p) })
	if !slices.Equal(touched, []string{"a.md", "b.md"}) {
		t.Errorf("touched %v", touched)
	}
	if w.Clock != 7 || w.HLC != 7000 || w.Folded[a.id.ID()] != 1 {
		t.Errorf("clock %d, hlc %d, folded %d", w.Clock, w.HLC, w.Folded[a.id.ID()])
	}
	id := e.VersionID(0)
	if got := w.HeadIDs("a.md"); len(got) != 1 || got[0] != id {
		t.Errorf("heads of a.md: %v, want %v", got, id)
	}
	if ver, _ := w.Body(id); ver.Path != "a.md" || len(ver.Inline) != 0 {
		t.Errorf("body %+v: want a.md without its inline bytes", ver)
	}
	if b, ok := w.Inline.Get(id); !ok || string(b) != "alpha" {
		t.Errorf("cached %q, %v", b, ok)
	}
	if !w.Unsaved() {
		t.Error("a fold since no snapshot is not unsaved")
	}

	w.Replaying = true
	e2, body2 := a.next(8, map[string]string{"a.md": "alpha 2"})
	w.Fold(e2, body2, func(string) {})
	if _, ok := w.Inline.Get(e2.VersionID(0)); ok {
		t.Error("a replayed version's inline bytes were cached")
	}
	if w.Folded[a.id.ID()] != 2 || w.Clock != 8 {
		t.Errorf("after replay: folded %d, clock %d", w.Folded[a.id.ID()], w.Clock)
	}
}

// TestHeldVector: the held prefix stops at the first entry not held,
// never passes what is folded in or the log's head, and once an entry is
// held it is not asked about again.
func TestHeldVector(t *testing.T) {
	w := New(nil)
	a := newAuthor(t, newRoot(t))
	for c := range uint64(3) {
		e, body := a.next(c+1, map[string]string{"f": string(rune('a' + c))})
		w.Fold(e, body, func(string) {})
	}
	notHeld := map[uint64]bool{2: true}
	asked := map[uint64]int{}
	held := func(id protocol.VersionID, _ entry.Version) bool {
		asked[id.Seq]++
		return !notHeld[id.Seq]
	}
	me := a.id.ID()
	if got := w.HeldVector(map[keys.DeviceID]uint64{me: 3}, held); got[me] != 1 {
		t.Errorf("held %d, want 1 (entry 2 is not held)", got[me])
	}
	delete(notHeld, 2)
	if got := w.HeldVector(map[keys.DeviceID]uint64{me: 3}, held); got[me] != 3 {
		t.Errorf("held %d, want 3", got[me])
	}
	if asked[1] != 1 {
		t.Errorf("entry 1 asked %d times, want once", asked[1])
	}
	// A head past what is folded in: the unfolded entry is not held.
	if got := w.HeldVector(map[keys.DeviceID]uint64{me: 5}, held); got[me] != 3 {
		t.Errorf("held %d past the folded prefix, want 3", got[me])
	}
}

// TestHoldBack: entries ahead are kept once each, taken in order, found
// by FirstAhead, and refused past the count and byte limits.
func TestHoldBack(t *testing.T) {
	w := New(nil)
	var d keys.DeviceID
	d[0] = 1
	for _, s := range []uint64{5, 3, 3, 9} {
		if err := w.HoldBack(EntryRef{d, s}, []byte{byte(s)}); err != nil {
			t.Fatal(err)
		}
	}
	if w.Ahead() != 3 || !w.IsAhead(EntryRef{d, 9}) || w.IsAhead(EntryRef{d, 4}) {
		t.Errorf("ahead %d", w.Ahead())
	}
	if got := w.FirstAhead(d, 3, 9); got != 5 {
		t.Errorf("first ahead in (3, 9]: %d, want 5", got)
	}
	if got := w.FirstAhead(d, 9, 20); got != 0 {
		t.Errorf("first ahead in (9, 20]: %d, want none", got)
	}
	if raw, ok := w.TakeAhead(EntryRef{d, 3}); !ok || !bytes.Equal(raw, []byte{3}) || w.Ahead() != 2 {
		t.Errorf("take 3: %v %v, %d left", raw, ok, w.Ahead())
	}
	if _, ok := w.TakeAhead(EntryRef{d, 3}); ok {
		t.Error("an entry taken twice")
	}
	if err := w.HoldBack(EntryRef{d, 100}, make([]byte, MaxAheadBytes)); !errors.Is(err, ErrTooFarAhead) {
		t.Errorf("past the byte limit: %v", err)
	}
	for s := uint64(200); w.Ahead() < MaxAhead; s++ {
		if err := w.HoldBack(EntryRef{d, s}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.HoldBack(EntryRef{d, 1}, nil); !errors.Is(err, ErrTooFarAhead) {
		t.Errorf("past the count limit: %v", err)
	}
}

// TestFromAuthor: what an author sent itself only moves up.
func TestFromAuthor(t *testing.T) {
	w := New(nil)
	var d keys.DeviceID
	w.NoteFromAuthor(d, 4)
	w.NoteFromAuthor(d, 2)
	if w.FromAuthor(d) != 4 {
		t.Errorf("from author %d, want 4", w.FromAuthor(d))
	}
}

// TestInlineCacheBounded: the cache evicts the oldest past CacheBytes.
func TestInlineCacheBounded(t *testing.T) {
	var c InlineCache
	big := bytes.Repeat([]byte("x"), CacheBytes/3)
	for i := range 4 {
		c.Put(protocol.VersionID{Seq: uint64(i + 1)}, big)
	}
	if c.bytes > CacheBytes || c.Len() != 3 {
		t.Errorf("cache holds %d bytes in %d versions, want at most %d in 3", c.bytes, c.Len(), CacheBytes)
	}
	if _, ok := c.Get(protocol.VersionID{Seq: 1}); ok {
		t.Error("the oldest version was not evicted")
	}
	c.Clear()
	if c.Len() != 0 {
		t.Error("Clear left versions")
	}
}
