package folder

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fsCase is one FS implementation the shared tests run against.
type fsCase struct {
	name string
	new  func(t *testing.T) FS
}

var fsCases = []fsCase{
	{"os", func(t *testing.T) FS {
		o, err := OpenOS(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		return o
	}},
	{"mem", func(t *testing.T) FS { return NewMemFS(MemFSConfig{}) }},
}

// eachFS runs fn against every FS implementation.
func eachFS(t *testing.T, fn func(t *testing.T, fsys FS)) {
	t.Helper()
	for _, c := range fsCases {
		t.Run(c.name, func(t *testing.T) { fn(t, c.new(t)) })
	}
}

// mkdirs creates p and its parents.
func mkdirs(t *testing.T, fsys FS, p string) {
	t.Helper()
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		if err := fsys.Mkdir(p[:i], 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			t.Fatalf("mkdir %s: %v", p[:i], err)
		}
		d, _ := splitPath(p[:i])
		fsys.SyncDir(d)
	}
}

// put writes p durably with content (a new inode each time), creating
// parents, as an editor that saves by rename would.
func put(t *testing.T, fsys FS, p, content string) {
	t.Helper()
	dir, _ := splitPath(p)
	if dir != "" {
		mkdirs(t, fsys, dir)
	}
	f, err := fsys.CreateTemp(dir, "put-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, content); err != nil {
		t.Fatal(err)
	}
	f.Sync()
	f.Close()
	if err := fsys.Chmod(f.Path(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Rename(f.Path(), p); err != nil {
		t.Fatal(err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
}

// appendTo appends to p in place (same inode), as a user edit would.
func appendTo(t *testing.T, fsys FS, p, more string) {
	t.Helper()
	switch f := fsys.(type) {
	case *OSFS:
		h, err := os.OpenFile(filepath.Join(f.Dir(), filepath.FromSlash(p)), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		if _, err := h.WriteString(more); err != nil {
			t.Fatal(err)
		}
	case *MemFS:
		f.mu.Lock()
		_, e, err := f.lookup("append", p)
		f.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		w := &memFile{m: f, n: e.node, path: p, w: true, off: len(e.node.data)}
		if _, err := io.WriteString(w, more); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("appendTo: unknown FS %T", fsys)
	}
}

// read returns p's content ("" and false if it is missing).
func read(t *testing.T, fsys FS, p string) (string, bool) {
	t.Helper()
	f, err := fsys.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false
	} else if err != nil {
		t.Fatalf("open %s: %v", p, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

// tree lists every path in fsys (including internal ones), sorted.
func tree(t *testing.T, fsys FS) []string {
	t.Helper()
	var out []string
	var walk func(d string)
	walk = func(d string) {
		ents, err := fsys.ReadDir(d)
		if err != nil {
			t.Fatalf("readdir %q: %v", d, err)
		}
		for _, e := range ents {
			p := joinPath(d, e.Name)
			out = append(out, p)
			if e.Kind == KindDir {
				walk(p)
			}
		}
	}
	walk("")
	return out
}

// scanInto scans and records every change in idx, returning the result.
func scanInto(t *testing.T, s *Scanner, idx MapIndex) Result {
	t.Helper()
	r, err := s.Scan(context.Background())
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	record(idx, r)
	return r
}

func record(idx MapIndex, r Result) {
	for _, c := range r.Changes {
		if c.Type == Deleted {
			delete(idx, c.Path)
		} else {
			idx.Put(c.New)
		}
	}
}

// changes renders a result's changes as "type path" lines.
func changes(r Result) string {
	var b strings.Builder
	for _, c := range r.Changes {
		b.WriteString(c.Type.String() + " " + c.Path + "\n")
	}
	return b.String()
}

func newScanner(t *testing.T, fsys FS, idx Index) *Scanner {
	t.Helper()
	s, err := NewScanner(ScannerConfig{FS: fsys, Index: idx, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
