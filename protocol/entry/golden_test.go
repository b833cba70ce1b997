package entry

import (
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden vectors in testdata/")

// golden compares got with testdata/name (hex or text), or rewrites it with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden vector (run with -update to create): %v", err)
	}
	if w := strings.TrimSpace(string(want)); got != w {
		t.Errorf("%s: the format changed.\ngot  %s\nwant %s\nIf intended, bump FormatV1 or rerun with -update and say why in the change.", name, got, w)
	}
}

// TestGolden pins the byte format of two chained entries and a body, built
// from fixed seeds (identity seed 0x01*32, root secret 00 01 .. 1f, epoch 0),
// a counting nonce source and fixed times.
func TestGolden(t *testing.T) {
	f := newFixture(t)
	e1 := mustNew(t, f.config(Head{}), sampleBody(f.other.ID()))
	e2 := mustNew(t, f.config(e1.Head()), &Body{Versions: []Version{
		inlineFile("notes/today.md", "# Today\n\n- write entries\n- golden vectors\n", e1.VersionID(0)),
	}})
	golden(t, "entry1.hex", hex.EncodeToString(e1.Bytes()))
	golden(t, "entry2.hex", hex.EncodeToString(e2.Bytes()))
	golden(t, "body1.hex", hex.EncodeToString(encodeBody(sampleBody(f.other.ID()))))
	golden(t, "cids.txt", e1.CID().String()+"\n"+e2.CID().String())

	// The stored vectors must also decode, validate and open.
	for i, name := range []string{"entry1.hex", "entry2.hex"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := hex.DecodeString(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		head := Head{}
		if i == 1 {
			head = e1.Head()
		}
		e, err := Validate(raw, f.vault, head)
		if err != nil {
			t.Fatalf("%s: got %v, want nil", name, err)
		}
		if _, err := OpenBody(e, f.ek); err != nil {
			t.Fatalf("%s: opening body: got %v, want nil", name, err)
		}
	}
}
