package member

import (
	"bytes"
	"errors"
	"testing"
)

// TestFormat3Words (issue 18): an add record that carries the join's words
// is format 3, decodes to the same words and bytes, and applies; words in
// any other operation, or words that are not SASWords words of the list,
// are refused; a format-2 record still decodes as format 2.
func TestFormat3Words(t *testing.T) {
	admin, dev, other := identity(t, 1), identity(t, 2), identity(t, 3)
	s := NewState(vault)
	apply(t, s, GenesisWith(admin, vaultKey, "laptop", 0, 1000))
	inv, err := NewInvite(seeded(9), admin.ID(), nil, 5000)
	if err != nil {
		t.Fatal(err)
	}
	words := inv.Words(dev.ID())
	r := s.Next(admin, Record{Op: OpAdd, Device: dev.ID(), Role: RoleMember, Name: "phone", Words: words}, 2000)
	if r.Format != Format3 {
		t.Fatalf("an add with words is format %d, want %d", r.Format, Format3)
	}
	d, err := Decode(r.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if d.Words != words || d.Name != "phone" || !bytes.Equal(d.Encode(), r.Encode()) || d.CID() != r.CID() {
		t.Fatalf("decoded %+v", d)
	}
	apply(t, s, r)
	if s.Name(dev.ID()) != "phone" || !s.IsMember(dev.ID()) {
		t.Fatalf("after the add: name %q, member %v", s.Name(dev.ID()), s.IsMember(dev.ID()))
	}

	// A named add without words stays format 2, and reads back as one.
	r2 := s.Next(admin, Record{Op: OpAdd, Device: other.ID(), Role: RoleMember, Name: "tablet"}, 3000)
	if r2.Format != Format2 {
		t.Fatalf("a named add without words is format %d, want %d", r2.Format, Format2)
	}
	if d, err := Decode(r2.Encode()); err != nil || d.Format != Format2 || d.Words != "" {
		t.Fatalf("format 2 decoded: %+v, %v", d, err)
	}

	for _, c := range []struct {
		name string
		op   Record
	}{
		{"words in a rename", Record{Op: OpRename, Device: dev.ID(), Name: "x", Words: words}},
		{"three words", Record{Op: OpAdd, Device: other.ID(), Role: RoleMember, Words: "abandon ability able"}},
		{"a word not in the list", Record{Op: OpAdd, Device: other.ID(), Role: RoleMember, Words: "abandon ability able zzzz"}},
		{"two spaces", Record{Op: OpAdd, Device: other.ID(), Role: RoleMember, Words: "abandon  ability able about"}},
		{"upper case", Record{Op: OpAdd, Device: other.ID(), Role: RoleMember, Words: "Abandon ability able about"}},
	} {
		bad := s.Next(admin, c.op, 4000)
		d, err := Decode(bad.Encode())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := s.Apply(d); !errors.Is(err, ErrBadOp) {
			t.Errorf("%s: got %v, want ErrBadOp", c.name, err)
		}
	}

	// A format-3 array that says format 2 is refused, and so is the other
	// way round.
	r3 := r
	r3.Format = Format2
	if _, err := Decode(r3.marshalAs(fieldsV3)); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("format 2 in a format-3 array: %v, want ErrUnknownFormat", err)
	}
}

// marshalAs encodes r in the array of the given length whatever its
// Format says, as a hostile peer could.
func (r Record) marshalAs(fields int) []byte {
	switch fields {
	case fieldsV3:
		b, err := encMode.Marshal(r)
		if err != nil {
			panic(err)
		}
		return b
	}
	return r.marshal()
}
