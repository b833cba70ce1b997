package bench

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// rng returns a seeded fast generator of random bytes.
func rng(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	return rand.NewChaCha8(s)
}

// writeRandomFile writes size random bytes to path, not synced.
func writeRandomFile(path string, size int64, seed uint64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, rng(seed), size); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// notes is a set of small files by relative path.
type notes map[string][]byte

// makeNotes returns n notes of size bytes spread over dirs folders.
func makeNotes(n, size, dirs int, seed uint64) notes {
	r := rng(seed)
	out := make(notes, n)
	for i := range n {
		b := make([]byte, size)
		_, _ = r.Read(b)
		// Text-like: notes are what B1 is about, and the bytes should
		// not compress to nothing either.
		for j := range b {
			b[j] = 'a' + b[j]%26
			if b[j] == 'z' {
				b[j] = '\n'
			}
		}
		out[fmt.Sprintf("folder%02d/note%05d.md", i%dirs, i)] = b
	}
	return out
}

func (ns notes) bytes() int64 {
	var t int64
	for _, b := range ns {
		t += int64(len(b))
	}
	return t
}

// write writes every note under root, each with one write, not synced.
func (ns notes) write(root string) error {
	made := map[string]bool{}
	for rel, b := range ns {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if d := filepath.Dir(p); !made[d] {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			made[d] = true
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// countFiles counts the regular files under root, skipping weft's .weft
// directory and hidden (temporary) files.
func countFiles(root string) int {
	n := 0
	_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := e.Name()
		if e.IsDir() {
			if name == ".weft" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(name, ".") && e.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

// verify checks that every note is under root, byte-identical.
func (ns notes) verify(root string) error {
	bad := 0
	var first string
	for rel, want := range ns {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil || !bytes.Equal(got, want) {
			if bad == 0 {
				first = rel
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d files missing or different (first: %s)", bad, len(ns), first)
	}
	return nil
}

// waitNotes polls root until it holds every note byte-identical and
// returns when the last one was seen.
func waitNotes(root string, ns notes, limit time.Duration) (time.Time, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if countFiles(root) >= len(ns) {
			seen := time.Now()
			if err := ns.verify(root); err == nil {
				return seen, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("not every file arrived within %s: %v", limit, ns.verify(root))
}

// sameFile reports whether two files hold the same bytes.
func sameFile(a, b string) (bool, error) {
	fa, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	ba, bb := make([]byte, 1<<20), make([]byte, 1<<20)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		if ea != nil || eb != nil {
			return (ea == io.EOF || ea == io.ErrUnexpectedEOF) && (eb == io.EOF || eb == io.ErrUnexpectedEOF), nil
		}
	}
}

func dirSize(root string) int64 {
	var n int64
	_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
