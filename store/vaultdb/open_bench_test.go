package vaultdb

import (
	"crypto/rand"
	"fmt"
	"testing"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/entry"
)

// BenchmarkOpenInline opens a log shaped like B10's: 100,000 small files
// of 2 KiB held inline, 1,000 versions an entry, after a first Open wrote
// the log checkpoint (what a restart finds). It reports the time of one
// Open (b.N of them) of the checkpointed log.
func BenchmarkOpenInline(b *testing.B) {
	f := newFixture()
	id := identity(b, 1)
	dir := b.TempDir()
	db, _ := openDB(b, Config{Dir: dir, Vault: f.vault})
	var prev entry.Head
	content := make([]byte, 2048)
	for e := range 100 {
		body := &entry.Body{}
		for i := range 1000 {
			rand.Read(content)
			c := append([]byte(nil), content...)
			body.Versions = append(body.Versions, entry.Version{
				Path: fmt.Sprintf("d%03d/n%04d.md", e, i), Kind: entry.KindFile, Mode: 0o644,
				MTime: 1_790_000_000_000_000_000, Size: uint64(len(c)), Hash: blake3.Sum256(c), Inline: c,
			})
		}
		en, err := entry.New(entry.Config{Identity: id, Vault: f.vault, Prev: prev, Clock: prev.Clock + 1, Keys: f.ek,
			Time: 1_790_000_000_000 + int64(e), Rand: rand.Reader}, body)
		if err != nil {
			b.Fatal(err)
		}
		if err := db.Append(en); err != nil {
			b.Fatal(err)
		}
		prev = en.Head()
	}
	db.Close()
	db, _ = openDB(b, Config{Dir: dir, Vault: f.vault}) // writes the checkpoint
	db.Close()
	b.ResetTimer()
	for range b.N {
		db, rep := openDB(b, Config{Dir: dir, Vault: f.vault})
		if rep.Trusted != 100 {
			b.Fatalf("trusted %d of %d records", rep.Trusted, rep.Records)
		}
		db.Close()
	}
}
