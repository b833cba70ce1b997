package keys

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

// TestDerivedKeysGolden pins the key hierarchy: a change to an HKDF info
// string or to the derivation would silently make every vault unreadable,
// so it must fail here first.
func TestDerivedKeysGolden(t *testing.T) {
	var root RootSecret
	for i := range root {
		root[i] = byte(i)
	}
	vk := root.Vault()
	vkey := root.VaultKey()
	vpub := vkey.Public()
	e0 := root.Epoch0().Keys(0)
	e1 := EpochSecret(root).Keys(1)
	got := map[string]string{
		"vault-id":     hex.EncodeToString(vk.ID[:]),
		"vault-seed":   hex.EncodeToString(vkey.priv.Seed()),
		"vault-public": hex.EncodeToString(vpub[:]),
		"vault-sig":    hex.EncodeToString(vkey.Sign([]byte("weft"))),
		"rendezvous":   hex.EncodeToString(vk.Rendezvous[:]),
		"epoch0-body":  hex.EncodeToString(e0.Body[:]),
		"epoch0-chunk": hex.EncodeToString(e0.Chunk[:]),
		"epoch0-id":    hex.EncodeToString(e0.ChunkID[:]),
		"epoch1-body":  hex.EncodeToString(e1.Body[:]),
	}
	// Computed independently with Python's hmac/hashlib (RFC 5869 HKDF);
	// the vault key's public key, ID and signature with the cryptography
	// package's ed25519 (testdata/vaultkey_ref.py).
	want := map[string]string{
		"vault-id":     "70aff0aafb8c7f2c4daf6923ad09052ece4323130b7ad49af058745c930f34e8",
		"vault-seed":   "0692de6c9560ac1c0c66259eb7dfdbf59603218f25ca3b16cefea62a6fb946e4",
		"vault-public": "a6478fe27142890e4631da4165e2d47fff6e6528699377a0b04b3aaa629ee73b",
		"vault-sig":    "e56dc5c169257d10e00b7b3308434f63e948b232be10a72ef52938b0a28ce9b6017d65dbb68f5138bfcd990f14926451d509a071e1722ebef9fa5bf8635a0b0c",
		"rendezvous":   "7a67fdd943f250e3827fda488738f30abf14cec2b047d4d6030e510c9b3989dc",
		"epoch0-body":  "9da80fa5da757cc5aa5ddb3505779d594794f1d9bdbdc984aabb5405c7b11f52",
		"epoch0-chunk": "cf900c03a010991f6d3e088a45518b2f2f7733ab57841786019ce638b69643fa",
		"epoch0-id":    "37abb8685260b5de24d439f414081d7d3408620f977a0c0b76b1fa03909b1316",
		"epoch1-body":  "d3f59e9ca139cff920c3941e24fbad9ba9007bdf80392e000ba7a0c60ec6c5a4",
	}
	for k, g := range got {
		if g != want[k] {
			t.Errorf("%s: got %s, want %s", k, g, want[k])
		}
	}
	// Every derived key differs from every other.
	seen := map[string]string{}
	for k, g := range got {
		if other, ok := seen[g]; ok {
			t.Errorf("%s and %s are the same key", k, other)
		}
		seen[g] = k
	}
	if e0.Epoch != 0 || e1.Epoch != 1 {
		t.Errorf("epochs: got %d and %d", e0.Epoch, e1.Epoch)
	}
}

func TestDeviceID(t *testing.T) {
	id, err := IdentityFromSeed(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	d := id.ID()
	s := d.PeerID()
	if len(s) < 40 || s[:8] != "12D3KooW" {
		t.Fatalf("peer ID %q does not look like an ed25519 libp2p peer ID", s)
	}
	back, err := ParseDeviceID(s)
	if err != nil || back != d {
		t.Fatalf("ParseDeviceID(%q) = %v, %v; want %v", s, back, err, d)
	}
	if d.Short() != s[8:16] {
		t.Fatalf("Short: got %q, want %q", d.Short(), s[8:16])
	}
	msg := []byte("hello")
	sig := id.Sign(msg)
	if !d.Verify(msg, sig) {
		t.Fatal("own signature does not verify")
	}
	if d.Verify([]byte("hellO"), sig) || d.Verify(msg, sig[:63]) {
		t.Fatal("a wrong message or a short signature verifies")
	}
	again, _ := IdentityFromSeed(id.Seed())
	if again.ID() != d {
		t.Fatal("identity does not round-trip through its seed")
	}
	for _, bad := range []string{"", "not base58 0OIl", "QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N"} {
		if _, err := ParseDeviceID(bad); err == nil {
			t.Errorf("ParseDeviceID(%q): got nil error", bad)
		}
	}
	if _, err := ParseDeviceID("QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N"); !errors.Is(err, ErrNotEd25519) {
		t.Errorf("RSA-style peer ID: got %v, want %v", err, ErrNotEd25519)
	}
	if _, err := IdentityFromSeed([]byte{1}); err == nil {
		t.Error("a 1-byte seed was accepted")
	}
}

func TestParseVaultID(t *testing.T) {
	v := VaultID{1, 2, 3}
	back, err := ParseVaultID(v.String())
	if err != nil || back != v {
		t.Fatalf("round trip: got %v, %v", back, err)
	}
	for _, bad := range []string{"", "abc", v.String() + "00", "zz" + v.String()[2:]} {
		if _, err := ParseVaultID(bad); err == nil {
			t.Errorf("ParseVaultID(%q): got nil error", bad)
		}
	}
}

// FuzzParseVaultSecrets: what an inviter sends (after its AEAD opens)
// parses or is refused, and what parses encodes back to its bytes.
func FuzzParseVaultSecrets(f *testing.F) {
	f.Add(RootSecret{1}.Secrets().Bytes())
	f.Add(make([]byte, 32))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseVaultSecrets(b)
		if err != nil {
			return
		}
		if got := s.Bytes(); string(got) != string(b) {
			t.Fatalf("round trip: %x, want %x", got, b)
		}
	})
}
