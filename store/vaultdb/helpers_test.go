package vaultdb

import (
	"bytes"
	"encoding/binary"
	"testing"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// counter is a deterministic nonce source: n, n+1, n+2, ... (mod 256).
type counter struct{ n byte }

func (c *counter) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = c.n
		c.n++
	}
	return len(p), nil
}

// fixture holds a vault and its epoch-0 keys.
type fixture struct {
	root  keys.RootSecret
	vault keys.VaultID
	ek    keys.EpochKeys
}

func newFixture() fixture {
	var root keys.RootSecret
	for i := range root {
		root[i] = byte(i)
	}
	return fixture{root: root, vault: root.Vault().ID, ek: root.Epoch0().Keys(0)}
}

// identity returns the device key made from seed byte n.
func identity(t testing.TB, n byte) *keys.Identity {
	t.Helper()
	id, err := keys.IdentityFromSeed(bytes.Repeat([]byte{n}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// next builds the entry after prev by id, with one small file version
// whose content is tagged by tag (so two calls with different tags fork).
func (f fixture) next(t testing.TB, id *keys.Identity, prev entry.Head, tag string) *entry.Entry {
	t.Helper()
	content := []byte(tag)
	body := &entry.Body{Versions: []entry.Version{{
		Path: "notes/" + tag + ".md", Kind: entry.KindFile, Mode: 0o644,
		MTime: 1_790_000_000_000_000_000 + int64(prev.Seq), Size: uint64(len(content)),
		Hash: blake3.Sum256(content), Inline: content,
	}}}
	var seed [8]byte
	binary.LittleEndian.PutUint64(seed[:], prev.Seq)
	e, err := entry.New(entry.Config{
		Identity: id, Vault: f.vault, Prev: prev, Clock: prev.Clock + 1, Keys: f.ek,
		Time: 1_790_000_000_000 + int64(prev.Seq), Rand: &counter{n: seed[0] ^ tag[0]},
	}, body)
	if err != nil {
		t.Fatalf("entry.New: %v", err)
	}
	return e
}

// chain builds n entries by id after prev.
func (f fixture) chain(t testing.TB, id *keys.Identity, prev entry.Head, n int) []*entry.Entry {
	t.Helper()
	out := make([]*entry.Entry, n)
	for i := range out {
		out[i] = f.next(t, id, prev, "e")
		prev = out[i].Head()
	}
	return out
}

func openDB(t testing.TB, cfg Config) (*DB, OpenReport) {
	t.Helper()
	db, rep, err := OpenConfig(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return db, rep
}

// mustHold fails unless db holds exactly these entries (Get, GetByCID and
// Range agree) and author heads match the last of each author.
func mustHold(t testing.TB, db *DB, es []*entry.Entry) {
	t.Helper()
	want := map[keys.DeviceID]entry.Head{}
	for _, e := range es {
		got, err := db.Get(e.Author(), e.Seq())
		if err != nil {
			t.Fatalf("Get(%s, %d): %v", e.Author().Short(), e.Seq(), err)
		}
		if !bytes.Equal(got.Bytes(), e.Bytes()) {
			t.Fatalf("Get(%s, %d): got other bytes", e.Author().Short(), e.Seq())
		}
		if got, err := db.GetByCID(e.CID()); err != nil || !got.CID().Equals(e.CID()) {
			t.Fatalf("GetByCID(%s): got %v, %v", e.CID(), got, err)
		}
		if h := want[e.Author()]; e.Seq() > h.Seq {
			want[e.Author()] = e.Head()
		}
	}
	heads := db.Heads()
	if len(heads) != len(want) {
		t.Fatalf("got %d heads, want %d", len(heads), len(want))
	}
	for a, h := range want {
		if got := heads[a]; got.Seq != h.Seq || !got.CID.Equals(h.CID) || got.Clock != h.Clock {
			t.Fatalf("head of %s: got %d %s, want %d %s", a.Short(), got.Seq, got.CID, h.Seq, h.CID)
		}
		var prev entry.Head
		n := uint64(0)
		err := db.Range(a, 1, h.Seq, func(e *entry.Entry) error {
			if _, err := entry.Validate(e.Bytes(), e.Vault(), prev); err != nil {
				return err
			}
			prev = e.Head()
			n++
			return nil
		})
		if err != nil || n != h.Seq {
			t.Fatalf("Range(%s): %d entries, %v; want %d", a.Short(), n, err, h.Seq)
		}
	}
}
