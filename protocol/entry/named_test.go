package entry

import (
	"encoding/hex"
	"errors"
	"testing"
)

// TestNamedBodyIsFormat3 (issue 18): a body that names its author makes a
// format-3 entry whose body opens with the same name; a body without one
// keeps the format it had (1, or 2 with pieces), so earlier vectors stand.
func TestNamedBodyIsFormat3(t *testing.T) {
	f := newFixture(t)
	body := sampleBody(f.other.ID())
	body.Author = "Zoë's phone"
	e := mustNew(t, f.config(Head{}), body)
	if e.Format() != FormatV3 || e.Pieced() {
		t.Fatalf("format %d, pieced %v; want %d, false", e.Format(), e.Pieced(), FormatV3)
	}
	v, err := Validate(e.Bytes(), f.vault, Head{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := OpenBody(v, f.ek)
	if err != nil {
		t.Fatal(err)
	}
	if got.Author != "Zoë's phone" || len(got.Versions) != len(body.Versions) {
		t.Fatalf("opened body: author %q, %d versions", got.Author, len(got.Versions))
	}
	stored, err := DecodeStored(e.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := OpenStoredBody(stored, f.ek); err != nil || got.Author != "Zoë's phone" {
		t.Fatalf("stored body: %v, author %q", err, got.Author)
	}
	golden(t, "entry3.hex", hex.EncodeToString(e.Bytes()))

	plain := mustNew(t, f.config(Head{}), sampleBody(f.other.ID()))
	if plain.Format() != FormatV1 {
		t.Fatalf("an unnamed body made format %d, want %d", plain.Format(), FormatV1)
	}
}

// TestNamedBodyRefusals: a name that breaks member.CheckName is refused
// when building and when reading, and the entry's format must say whether
// its body has a name (one form per entry).
func TestNamedBodyRefusals(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{" padded", "line\nbreak", "bidi\u202eoverride", string(make([]byte, 65))} {
		body := sampleBody(f.other.ID())
		body.Author = name
		if _, err := New(f.config(Head{}), body); !errors.Is(err, ErrMalformed) {
			t.Errorf("New with author %q: got %v, want ErrMalformed", name, err)
		}
		if _, err := decodeBody(marshal(&wireNamedBody{Author: name})); !errors.Is(err, ErrMalformed) {
			t.Errorf("decoding a body named %q: got %v, want ErrMalformed", name, err)
		}
	}

	// A format-1 entry whose sealed body has a name, and a format-3 entry
	// whose body has none: both signed by their author, both refused.
	named := sampleBody(f.other.ID())
	named.Author = "laptop"
	for _, c := range []struct {
		format uint64
		body   *Body
	}{{FormatV1, named}, {FormatV3, sampleBody(f.other.ID())}} {
		good := mustNew(t, f.config(Head{}), c.body)
		w := good.w
		w.Format = c.format
		raw := forge(f.id, w)
		e, err := Validate(raw, f.vault, Head{})
		if err != nil {
			t.Fatalf("format %d: the forged entry's public part: %v", c.format, err)
		}
		if _, err := OpenBody(e, f.ek); !errors.Is(err, ErrMalformed) {
			t.Errorf("format %d, body named %q: got %v, want ErrMalformed", c.format, c.body.Author, err)
		}
	}
}
