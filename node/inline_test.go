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
