package keys

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParseDeviceID: device IDs arrive as text from peers' events and the
// local API. ParseDeviceID never panics; whatever parses is the one text
// form of its key (PeerID gives the input back), and X25519 on any parsed
// key never panics and fails only with ErrNotOnCurve.
func FuzzParseDeviceID(f *testing.F) {
	id, err := IdentityFromSeed(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(id.ID().PeerID())
	f.Add(DeviceID{}.PeerID())
	f.Add(DeviceID{0xff, 0xff, 0xff, 0xff}.PeerID())
	f.Add("QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N")
	f.Add("")
	f.Add("1111")
	f.Add("not base58 0OIl")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDeviceID(s)
		if err != nil {
			return
		}
		if got := d.PeerID(); got != s {
			t.Fatalf("ParseDeviceID(%q) parsed a key whose text form is %q", s, got)
		}
		if _, err := d.X25519(); err != nil && !errors.Is(err, ErrNotOnCurve) {
			t.Fatalf("X25519 of %s: undocumented error %v", s, err)
		}
		_ = d.Verify([]byte("msg"), make([]byte, 64))
	})
}

// FuzzParseVaultID: vault IDs arrive as hex text from the local API and
// the relay's command line. ParseVaultID never panics, and whatever parses
// round-trips through String (hex digits in either case are accepted, so
// only the value, not the text, is compared).
func FuzzParseVaultID(f *testing.F) {
	f.Add(VaultID{1, 2, 3}.String())
	f.Add("")
	f.Add("zz")
	f.Add("ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVaultID(s)
		if err != nil {
			return
		}
		back, err := ParseVaultID(v.String())
		if err != nil || back != v {
			t.Fatalf("round trip of %q: got (%v, %v), want (%v, nil)", s, back, err, v)
		}
	})
}
