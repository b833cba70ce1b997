package member

import (
	"bytes"
	"errors"
	"testing"

	"github.com/weftsync/weft/protocol/keys"
)

// TestGenesisVaultProof checks that a genesis is accepted only when its
// vault key hashes to the vault ID and signs the record for its admin, by
// Decode and by State.Apply alike: whoever knows a vault's ID but not its
// root secret cannot make the vault's first record.
func TestGenesisVaultProof(t *testing.T) {
	admin, stranger := identity(t, 1), identity(t, 3)
	strangerKey := keys.RootSecret{9}.VaultKey()
	// forge returns a genesis of the test vault changed by mod and then
	// signed by signer (the device signature is always valid).
	forge := func(signer *keys.Identity, mod func(r *Record)) Record {
		r := Genesis(admin, vaultKey, 1)
		mod(&r)
		r.Sign(signer)
		return r
	}
	good := Genesis(admin, vaultKey, 1)
	tests := []struct {
		name string
		rec  Record
		want error // nil: accepted
	}{
		{"valid", good, nil},
		{"a stranger's vault key claims the vault ID", func() Record {
			// What a squatter can make: its own vault key, the real ID.
			r := Genesis(stranger, strangerKey, 1)
			r.Vault = vault
			r.VaultSig = strangerKey.Sign(r.vaultSigningBytes())
			r.Sign(stranger)
			return r
		}(), ErrVaultKey},
		{"no vault key", forge(admin, func(r *Record) { r.VaultKey = nil }), ErrVaultKey},
		{"short vault key", forge(admin, func(r *Record) { r.VaultKey = r.VaultKey[:31] }), ErrVaultKey},
		{"altered vault key", forge(admin, func(r *Record) { r.VaultKey = bytes.Clone(r.VaultKey); r.VaultKey[0] ^= 1 }), ErrVaultKey},
		{"no vault signature", forge(admin, func(r *Record) { r.VaultSig = nil }), ErrVaultSignature},
		{"altered vault signature", forge(admin, func(r *Record) { r.VaultSig = bytes.Clone(r.VaultSig); r.VaultSig[10] ^= 1 }), ErrVaultSignature},
		{"vault signature moved to another admin", forge(stranger, func(r *Record) { r.Device = stranger.ID() }), ErrVaultSignature},
		{"fields changed after the vault signed", forge(admin, func(r *Record) { r.Time++ }), ErrVaultSignature},
		{"the real vault key signs the wrong bytes", forge(admin, func(r *Record) { r.VaultSig = vaultKey.Sign(r.signingBytes()) }), ErrVaultSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := NewState(vault).Apply(tt.rec); !errors.Is(err, tt.want) {
				t.Errorf("Apply: got %v, want %v", err, tt.want)
			}
			if _, err := Decode(tt.rec.Encode()); !errors.Is(err, tt.want) {
				t.Errorf("Decode: got %v, want %v", err, tt.want)
			}
		})
	}
	if good.Vault != vault || !bytes.Equal(good.VaultKey, func() []byte { p := vaultKey.Public(); return p[:] }()) {
		t.Fatalf("Genesis: got vault %s key %x, want vault %s", good.Vault, good.VaultKey, vault)
	}
}

// TestVaultKeyOnlyInGenesis checks that a record other than a genesis
// carries no vault key or signature.
func TestVaultKeyOnlyInGenesis(t *testing.T) {
	s, admin, _ := fixture(t)
	g := s.Records()[0]
	tests := []struct {
		name string
		mod  func(r *Record)
	}{
		{"vault key", func(r *Record) { r.VaultKey = g.VaultKey }},
		{"vault signature", func(r *Record) { r.VaultSig = g.VaultSig }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.Next(admin, Record{Op: OpAddRelay, Relay: "/ip4/1.2.3.4/tcp/1"}, 1)
			tt.mod(&r)
			r.Sign(admin)
			if err := s.Apply(r); !errors.Is(err, ErrBadOp) {
				t.Fatalf("got %v, want %v", err, ErrBadOp)
			}
		})
	}
}
