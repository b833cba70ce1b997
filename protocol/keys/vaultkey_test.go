package keys

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
)

// TestVaultKeyRFC8032 checks the ed25519 under the vault key against
// RFC 8032 section 7.1, tests 1 and 2, through the same code path.
func TestVaultKeyRFC8032(t *testing.T) {
	tests := []struct {
		name, seed, pub, msg, sig string
	}{
		{"test 1",
			"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
			"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
			"",
			"e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
		{"test 2",
			"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
			"3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
			"72",
			"92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := &VaultKey{priv: ed25519.NewKeyFromSeed(unhex(t, tt.seed))}
			pub := k.Public()
			if got := hex.EncodeToString(pub[:]); got != tt.pub {
				t.Fatalf("public key: got %s, want %s", got, tt.pub)
			}
			msg := unhex(t, tt.msg)
			if got := hex.EncodeToString(k.Sign(msg)); got != tt.sig {
				t.Fatalf("signature: got %s, want %s", got, tt.sig)
			}
			if !pub.Verify(msg, unhex(t, tt.sig)) {
				t.Fatal("the RFC signature does not verify")
			}
		})
	}
}

func TestVaultIDMatches(t *testing.T) {
	var root, other RootSecret
	root[0], other[0] = 1, 2
	pub := root.VaultKey().Public()
	id := root.Vault().ID
	if id != pub.ID() || !id.Matches(pub) {
		t.Fatalf("vault ID %s does not match the vault key %s", id, pub)
	}
	if id.Matches(other.VaultKey().Public()) {
		t.Fatal("another vault's key matches the vault ID")
	}
	bent := pub
	bent[31] ^= 1
	if id.Matches(bent) {
		t.Fatal("an altered key matches the vault ID")
	}
	if root.VaultKey().Public() != pub {
		t.Fatal("the vault key is not deterministic")
	}
	// The vault key is no other key of the hierarchy.
	seed := derive32(root[:], infoVaultKey)
	for name, k := range map[string][32]byte{"rendezvous": root.Vault().Rendezvous, "epoch 0": root.Epoch0(), "vault ID": id} {
		if k == seed || k == pub {
			t.Errorf("the vault key equals the %s", name)
		}
	}

	msg := []byte("genesis")
	sig := root.VaultKey().Sign(msg)
	tests := []struct {
		name string
		key  VaultPublicKey
		msg  []byte
		sig  []byte
		want bool
	}{
		{"valid", pub, msg, sig, true},
		{"other message", pub, []byte("genesiS"), sig, false},
		{"other key", other.VaultKey().Public(), msg, sig, false},
		{"short signature", pub, msg, sig[:63], false},
		{"no signature", pub, msg, nil, false},
		{"zero key", VaultPublicKey{}, msg, sig, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.key.Verify(tt.msg, tt.sig); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVaultKeyOpensWhatIsSealedToIt: an epoch secret sealed to the vault
// key's Recipient opens with the vault key (what the recovery phrase
// derives), and with no device key.
func TestVaultKeyOpensWhatIsSealedToIt(t *testing.T) {
	root := RootSecret{4, 5, 6}
	vk := root.VaultKey()
	vault := root.Vault().ID
	secret := EpochSecret{9, 9, 9}
	sealed, err := SealEpochSecret(rand.Reader, vk.Public().Recipient(), vault, 3, secret)
	if err != nil {
		t.Fatal(err)
	}
	got, err := vk.OpenEpochSecret(vault, 3, sealed)
	if err != nil || got != secret {
		t.Fatalf("vault key: %v", err)
	}
	if _, err := vk.OpenEpochSecret(vault, 4, sealed); !errors.Is(err, ErrSealedSecret) {
		t.Errorf("another epoch: got %v, want %v", err, ErrSealedSecret)
	}
	id, err := GenerateIdentity(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := id.OpenEpochSecret(vault, 3, sealed); !errors.Is(err, ErrSealedSecret) {
		t.Errorf("a device key: got %v, want %v", err, ErrSealedSecret)
	}
}
