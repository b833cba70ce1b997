package pack_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weftsync/weft/store/chunkstore"
	"github.com/weftsync/weft/store/pack"
	"github.com/weftsync/weft/store/storetest"
)

// TestConformance runs the chunk store conformance suite over the pack
// store, with packs of 64 KiB so that a few dozen chunks span several.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		dir := t.TempDir()
		packDir := filepath.Join(dir, "packs")
		return storetest.Backend{
			Open: func(t testing.TB, o storetest.Options) chunkstore.Store {
				t.Helper()
				s, err := pack.Open(pack.Config{
					Dir:          dir,
					PackSize:     64 << 10,
					OnQuarantine: o.OnQuarantine,
					Now:          o.Now,
				})
				if err != nil {
					t.Fatalf("pack.Open: %v", err)
				}
				return s
			},
			IndexDir: filepath.Join(dir, "index"),
			Units: func(t testing.TB) []string {
				t.Helper()
				ents, err := os.ReadDir(packDir)
				if errors.Is(err, os.ErrNotExist) {
					return nil // a destroyed store
				}
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, e := range ents {
					if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".pack") {
						names = append(names, e.Name())
					}
				}
				slices.Sort(names)
				return names
			},
			ReadUnit: func(t testing.TB, name string) []byte {
				t.Helper()
				b, err := os.ReadFile(filepath.Join(packDir, name))
				if err != nil {
					t.Fatal(err)
				}
				return b
			},
			WriteUnit: func(t testing.TB, name string, data []byte) {
				t.Helper()
				if err := os.WriteFile(filepath.Join(packDir, name), data, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			RemoveUnit: func(t testing.TB, name string) {
				t.Helper()
				if err := os.Remove(filepath.Join(packDir, name)); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}
