package vaultdb

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/weftsync/weft/protocol/entry"
)

// BenchmarkAppend appends one entry per Append call from 1 and 16
// goroutines (one author each) and reports entries per second and fsyncs
// (segment plus index journal) per Append.
func BenchmarkAppend(b *testing.B) {
	f := newFixture()
	for _, writers := range []int{1, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			per := (b.N + writers - 1) / writers
			chains := make([][]*entry.Entry, writers)
			for w := range chains {
				chains[w] = f.chain(b, identity(b, byte(w+1)), entry.Head{}, per)
			}
			db, _ := openDB(b, Config{Dir: b.TempDir(), Vault: f.vault})
			defer db.Close()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for _, e := range chains[w] {
						if err := db.Append(e); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			s := db.Stats()
			b.ReportMetric(float64(s.Entries)/b.Elapsed().Seconds(), "entries/s")
			b.ReportMetric(float64(s.SegmentSyncs+s.IndexSyncs)/float64(s.Appends), "fsyncs/append")
		})
	}
}

// BenchmarkGet looks up random entries among 10,000 by (author, seq),
// reading each from its segment and checking it.
func BenchmarkGet(b *testing.B) {
	f := newFixture()
	id := identity(b, 1)
	es := f.chain(b, id, entry.Head{}, 10_000)
	db, _ := openDB(b, Config{Dir: b.TempDir(), Vault: f.vault})
	defer db.Close()
	for i := 0; i < len(es); i += 500 {
		if err := db.Append(es[i:min(i+500, len(es))]...); err != nil {
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	for b.Loop() {
		if _, err := db.Get(id.ID(), 1+rng.Uint64N(uint64(len(es)))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
}

// BenchmarkIndexGet looks up random folder records among 10,000.
func BenchmarkIndexGet(b *testing.B) {
	f := newFixture()
	db, _ := openDB(b, Config{Dir: b.TempDir(), Vault: f.vault})
	defer db.Close()
	const n = 10_000
	var u Update
	for i := range n {
		u.PutIndex(fmt.Sprintf("dir%d/file%d.md", i%100, i), Record{Kind: entry.KindFile, Size: uint64(i), Hash: [32]byte{byte(i)}})
	}
	if err := db.Commit(&u); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	for b.Loop() {
		i := rng.IntN(n)
		if _, ok, err := db.IndexGet(fmt.Sprintf("dir%d/file%d.md", i%100, i)); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
}
