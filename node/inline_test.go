package node

import (
	"bytes"
	"context"
	"fmt"
	"testing"
)

// TestInlineContentReadBack: inline bytes are kept in a bounded cache, not
// with the bodies (at 100,000 small files they were half the live heap;
// logview's TestBodyIsTheFoldedBody holds bodies to that), and a version
// whose bytes left the cache is read back from the log, byte for byte.
func TestInlineContentReadBack(t *testing.T) {
	n, folder := testNode(t)
	want := map[string][]byte{}
	for i := range 20 {
		name := fmt.Sprintf("note%02d.md", i)
		want[name] = bytes.Repeat([]byte(fmt.Sprintf("note %d\n", i)), 40)
		writeFile(t, folder, name, want[name])
	}
	if err := n.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	v := n.vaultsNow()[0]
	v.mu.Lock()
	bodies := 0
	for range v.view.Bodies() {
		bodies++
	}
	v.mu.Unlock()
	if bodies < 20 {
		t.Fatalf("%d bodies, want the 20 notes", bodies)
	}
	// What the device authored is on its disk: not cached, so every read
	// below misses.
	if cached := v.view.Inline.Len(); cached != 0 {
		t.Errorf("%d versions cached after the scan, want none (they are this device's own)", cached)
	}
	for name, content := range want {
		v.mu.Lock()
		rec := v.index.Rec(name)
		ver, _ := v.view.Body(rec.Version)
		v.mu.Unlock()
		got, err := v.withInline(rec.Version, ver)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got.Inline, content) {
			t.Fatalf("%s: read back %q, want %q", name, got.Inline, content)
		}
	}
	// The first miss read the entry, which put every note back.
	refilled := v.view.Inline.Len()
	if refilled < 20 {
		t.Errorf("%d versions cached after reading back, want the entry's 20", refilled)
	}
}

// TestInlineReadBackForACopy: a conflict copy of a version is written
// under another name than the version's, so reading its bytes back from
// the log must not take the name for a sign of another version. This
// device's own versions are never in the cache, so a conflict whose loser
// was its own small file failed to apply ("the log holds another version
// there") and left a copy more on each retry (TestConcurrentEdits, once
// in a loaded run).
func TestInlineReadBackForACopy(t *testing.T) {
	n, folder := testNode(t)
	content := []byte("mine, copied aside\n")
	writeFile(t, folder, "note.md", content)
	if err := n.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	v := n.vaultsNow()[0]
	v.mu.Lock()
	id := v.index.Rec("note.md").Version
	ver, ok := v.view.Body(id)
	v.mu.Unlock()
	if !ok || len(ver.Inline) != 0 || v.view.Inline.Len() != 0 {
		t.Fatalf("precondition: body %v, %d inline bytes held, %d cached; want a body without its bytes and an empty cache", ok, len(ver.Inline), v.view.Inline.Len())
	}
	ver.Path = "note.conflict-dev-20261208-030050-abcdef.md" // as a decision names the copy
	got, err := v.withInline(id, ver)
	if err != nil {
		t.Fatalf("reading a copy's bytes back: %v", err)
	}
	if !bytes.Equal(got.Inline, content) || got.Path != ver.Path {
		t.Fatalf("read back %q at %s, want %q at the copy's name", got.Inline, got.Path, content)
	}
	v.view.Inline.Clear() // the read above cached the entry's bytes
	ver.Hash[0] ^= 1
	if _, err := v.withInline(id, ver); err == nil {
		t.Fatal("a body whose hash is not the log's version's was read back")
	}
}

// TestIdleTrimDropsInlineCache: an idle node lets go of the inline bytes
// it cached (received or read back), and a version's bytes are read back
// from the log after that, byte for byte.
func TestIdleTrimDropsInlineCache(t *testing.T) {
	n, folder := testNode(t)
	want := map[string][]byte{}
	for i := range 20 {
		name := fmt.Sprintf("note%02d.md", i)
		want[name] = []byte(fmt.Sprintf("note %d\n", i))
		writeFile(t, folder, name, want[name])
	}
	if err := n.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	v := n.vaultsNow()[0]
	read := func() {
		t.Helper()
		for name, content := range want {
			v.mu.Lock()
			rec := v.index.Rec(name)
			ver, _ := v.view.Body(rec.Version)
			v.mu.Unlock()
			got, err := v.withInline(rec.Version, ver)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !bytes.Equal(got.Inline, content) {
				t.Fatalf("%s: read %q, want %q", name, got.Inline, content)
			}
		}
	}
	read()
	if cached := v.view.Inline.Len(); cached < 20 {
		t.Fatalf("precondition: %d versions cached after reading back, want 20", cached)
	}
	n.trimIdle()
	if cached := v.view.Inline.Len(); cached != 0 {
		t.Fatalf("%d versions cached after the idle trim, want none", cached)
	}
	reads := v.view.Inline.Reads.Load()
	read()
	if got := v.view.Inline.Reads.Load() - reads; got != 1 {
		t.Errorf("%d entries read back after the trim, want 1 (the notes' one entry)", got)
	}
}
