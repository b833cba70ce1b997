package entry

import (
	"bytes"
	"testing"

	"github.com/ipfs/go-cid"
	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/keys"
)

// counter is a deterministic nonce source: it yields n, n+1, n+2, ... (mod
// 256). Tests use it so that golden vectors are reproducible.
type counter struct{ n byte }

func (c *counter) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = c.n
		c.n++
	}
	return len(p), nil
}

// fixture holds fixed keys derived from fixed seeds.
type fixture struct {
	id    *keys.Identity
	other *keys.Identity
	vault keys.VaultID
	ek    keys.EpochKeys
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	id, err := keys.IdentityFromSeed(bytes.Repeat([]byte{0x01}, 32))
	if err != nil {
		t.Fatal(err)
	}
	other, err := keys.IdentityFromSeed(bytes.Repeat([]byte{0x02}, 32))
	if err != nil {
		t.Fatal(err)
	}
	var root keys.RootSecret
	for i := range root {
		root[i] = byte(i)
	}
	return fixture{id: id, other: other, vault: root.Vault().ID, ek: root.Epoch0().Keys(0)}
}

// config returns a Config for the entry after prev.
func (f fixture) config(prev Head) Config {
	return Config{
		Identity: f.id,
		Vault:    f.vault,
		Prev:     prev,
		Clock:    prev.Clock + 1,
		Keys:     f.ek,
		Time:     1_790_000_000_000 + int64(prev.Seq),
		Rand:     &counter{n: byte(prev.Seq)},
	}
}

// chunkCID returns a well-formed chunk CID for a name.
func chunkCID(name string) cid.Cid {
	sum := blake3.Sum256([]byte(name))
	c, err := parseCID(append(bytes.Clone(chunkCIDPrefix), sum[:]...), chunkCIDPrefix)
	if err != nil {
		panic(err)
	}
	return c
}

func inlineFile(path string, content string, supersedes ...VersionID) Version {
	return Version{
		Path: path, Kind: KindFile, Mode: 0o644, MTime: 1_790_000_000_123_456_789,
		Size: uint64(len(content)), Supersedes: supersedes,
		Hash: blake3.Sum256([]byte(content)), Inline: []byte(content),
	}
}

// sampleBody has one version of every kind and both content forms.
func sampleBody(other keys.DeviceID) *Body {
	return &Body{Versions: []Version{
		inlineFile("notes/today.md", "# Today\n\n- write entries\n"),
		{
			Path: "photos/été.jpg", Kind: KindFile, Mode: 0o755, MTime: 1_790_000_000_000_000_001,
			Size: 300_000, Hash: blake3.Sum256([]byte("photo")),
			Chunks: []ChunkRef{{chunkCID("a"), 200_000}, {chunkCID("b"), 100_000}},
		},
		{Path: "photos", Kind: KindDir, Mode: 0o755, MTime: 5},
		{Path: "latest", Kind: KindSymlink, Size: 16, Target: "photos/été.jpg"},
		{Path: "old.txt", Kind: KindDeletion, Supersedes: []VersionID{{Author: other, Seq: 3, Index: 1}}},
	}}
}

// mustNew builds an entry or fails the test.
func mustNew(t testing.TB, cfg Config, b *Body) *Entry {
	t.Helper()
	e, err := New(cfg, b)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

// forge encodes w and signs it with id, bypassing every check New makes, so
// tests can produce validly signed entries that break other rules.
func forge(id *keys.Identity, w wireEntry) []byte {
	author := id.ID()
	w.Author = author[:]
	w.Sig = make([]byte, sigSize)
	raw := marshal(&w)
	copy(raw[len(raw)-sigSize:], id.Sign(signingInput(raw)))
	return raw
}

// sealFor seals plain as the body of an entry with these fields.
func sealFor(f fixture, plain []byte, seq uint64) []byte {
	b, err := seal(plain, &f.ek.Body, bodyAD(f.vault, f.id.ID(), seq, f.ek.Epoch), &counter{})
	if err != nil {
		panic(err)
	}
	return b
}
