package keys

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/mr-tron/base58/base58"
	"golang.org/x/crypto/hkdf"
)

// DeviceID is a device's ed25519 public key. Its libp2p peer ID is derived
// from it (see PeerID), so the device ID and the peer ID name the same thing.
type DeviceID [ed25519.PublicKeySize]byte

// PeerID returns the libp2p peer ID of the device in its usual base58 text
// form ("12D3KooW..."): the identity multihash of the protobuf-encoded
// ed25519 public key. It is computed here, without importing libp2p, so that
// protocol/ stays free of networking; a test pins it against libp2p's own.
func (d DeviceID) PeerID() string {
	// protobuf PublicKey{Type: Ed25519 (1), Data: key}: 08 01 12 20 <32 bytes>
	// identity multihash: 00 <len=36> <protobuf bytes>
	var b [2 + 4 + ed25519.PublicKeySize]byte
	b[0], b[1] = 0x00, 4+ed25519.PublicKeySize
	b[2], b[3], b[4], b[5] = 0x08, 0x01, 0x12, ed25519.PublicKeySize
	copy(b[6:], d[:])
	return base58.Encode(b[:])
}

// String returns the peer ID form, which is what users see.
func (d DeviceID) String() string { return d.PeerID() }

// Short returns the first characters of the peer ID after its common
// "12D3KooW" prefix: enough to tell a person's few devices apart in file
// names and logs.
func (d DeviceID) Short() string {
	s := d.PeerID()
	if len(s) > 16 {
		return s[8:16]
	}
	return s
}

// ParseDeviceID parses the peer ID text form of an ed25519 device.
func ParseDeviceID(s string) (DeviceID, error) {
	var d DeviceID
	b, err := base58.Decode(s)
	if err != nil {
		return d, fmt.Errorf("device ID %q: %w", s, err)
	}
	if len(b) != 2+4+ed25519.PublicKeySize || b[0] != 0 || b[1] != 4+ed25519.PublicKeySize ||
		b[2] != 0x08 || b[3] != 0x01 || b[4] != 0x12 || b[5] != ed25519.PublicKeySize {
		return d, fmt.Errorf("device ID %q: %w", s, ErrNotEd25519)
	}
	copy(d[:], b[6:])
	return d, nil
}

// ErrNotEd25519 means a peer ID does not hold an inline ed25519 key.
var ErrNotEd25519 = errors.New("not an ed25519 peer ID")

// Verify reports whether sig is id's valid signature of msg.
func (d DeviceID) Verify(msg, sig []byte) bool {
	if len(sig) != ed25519.SignatureSize {
		return false
	}
	return ed25519.Verify(ed25519.PublicKey(d[:]), msg, sig)
}

// Identity is a device's private key. It is safe for concurrent use.
type Identity struct {
	priv ed25519.PrivateKey
}

// GenerateIdentity makes a new device identity from rand (crypto/rand.Reader
// in production, a seeded source in tests).
func GenerateIdentity(rand io.Reader) (*Identity, error) {
	_, priv, err := ed25519.GenerateKey(rand)
	if err != nil {
		return nil, fmt.Errorf("generating device key: %w", err)
	}
	return &Identity{priv: priv}, nil
}

// IdentityFromSeed rebuilds an identity from its 32-byte seed, the form in
// which it is saved.
func IdentityFromSeed(seed []byte) (*Identity, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("device key seed: got %d bytes, want %d", len(seed), ed25519.SeedSize)
	}
	return &Identity{priv: ed25519.NewKeyFromSeed(seed)}, nil
}

// Seed returns the 32-byte seed that IdentityFromSeed accepts. The caller
// must keep it secret.
func (i *Identity) Seed() []byte { return i.priv.Seed() }

// PrivateKey returns the ed25519 private key, for node/ to build the libp2p
// host identity from. The caller must not modify it.
func (i *Identity) PrivateKey() ed25519.PrivateKey { return i.priv }

// ID returns the device ID.
func (i *Identity) ID() DeviceID {
	var d DeviceID
	copy(d[:], i.priv.Public().(ed25519.PublicKey))
	return d
}

// Sign signs msg.
func (i *Identity) Sign(msg []byte) []byte { return ed25519.Sign(i.priv, msg) }

// VaultID names a vault in public: relays and the wire see it. It is the
// hash of the vault key's public key (VaultPublicKey.ID), and the vault key
// derives from the root secret, so the recovery phrase alone finds the vault
// again, the ID reveals nothing of the secret, and anyone can check a
// claimed vault public key against the ID without any secret (vaultkey.go).
type VaultID [32]byte

func (v VaultID) String() string { return hex.EncodeToString(v[:]) }

// ParseVaultID parses the hex form String returns.
func ParseVaultID(s string) (VaultID, error) {
	var v VaultID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(v) {
		return v, fmt.Errorf("vault ID %q: want %d hex digits", s, 2*len(v))
	}
	copy(v[:], b)
	return v, nil
}

// RootSecret is a vault's 256-bit root secret, the one the recovery phrase
// encodes. Everything else is derived from it.
type RootSecret [32]byte

// EpochSecret is the secret of one key epoch. Epoch 0's comes from the root
// secret; each revocation starts an epoch whose secret is random and reaches
// the remaining devices encrypted to each one.
type EpochSecret [32]byte

// VaultKeys are the subkeys derived from the root secret that do not change
// with epochs.
type VaultKeys struct {
	ID         VaultID
	Rendezvous [32]byte // names under which devices meet in the DHT
}

// EpochKeys are the subkeys of one key epoch.
type EpochKeys struct {
	Epoch   uint32
	Body    [32]byte // XChaCha20-Poly1305 key of entry bodies
	Chunk   [32]byte // root of per-chunk encryption keys
	ChunkID [32]byte // BLAKE3 key of the keyed hash that identifies chunk plaintext
}

// HKDF info strings. Changing one changes every derived key: they are part of
// the format (docs/protocol.md, "Keys").
const (
	infoVaultKey   = "weft/v1 vault-key"
	infoRendezvous = "weft/v1 rendezvous"
	infoEpoch0     = "weft/v1 epoch-0"
	infoBody       = "weft/v1 body"
	infoChunk      = "weft/v1 chunk-key"
	infoChunkID    = "weft/v1 chunk-id"
)

// derive32 runs HKDF-SHA256 over secret with no salt and the given info.
func derive32(secret []byte, info string) [32]byte {
	var out [32]byte
	r := hkdf.New(sha256.New, secret, nil, []byte(info))
	if _, err := io.ReadFull(r, out[:]); err != nil {
		panic("keys: invariant: hkdf cannot fail for 32 bytes: " + err.Error())
	}
	return out
}

// Vault derives the vault-wide subkeys. The ID is VaultKey().Public().ID().
func (r RootSecret) Vault() VaultKeys {
	return VaultKeys{
		ID:         r.VaultKey().Public().ID(),
		Rendezvous: derive32(r[:], infoRendezvous),
	}
}

// Epoch0 returns the secret of the vault's first key epoch.
func (r RootSecret) Epoch0() EpochSecret { return EpochSecret(derive32(r[:], infoEpoch0)) }

// Keys derives the subkeys of epoch from its secret.
func (s EpochSecret) Keys(epoch uint32) EpochKeys {
	// The epoch number is bound into each key so two epochs can never share
	// one, even if a secret were reused by mistake.
	info := func(base string) string { return fmt.Sprintf("%s epoch=%d", base, epoch) }
	return EpochKeys{
		Epoch:   epoch,
		Body:    derive32(s[:], info(infoBody)),
		Chunk:   derive32(s[:], info(infoChunk)),
		ChunkID: derive32(s[:], info(infoChunkID)),
	}
}

// VaultSecrets is what a member device holds of a vault: everything the
// root secret gives except the vault key. In a recoverable vault
// (member.FlagRecoverable) devices hold only this, so the recovery phrase
// (the root secret) stays the one thing that signs as the vault and opens
// every epoch, and a revoked device cannot use it (docs/security.md,
// "Recovery"). It has the root secret's Vault and Epoch0, so code that
// needs only those takes either.
type VaultSecrets struct {
	vault  VaultKeys
	epoch0 EpochSecret
}

// VaultSecretsSize is the size of VaultSecrets' encoding.
const VaultSecretsSize = 3 * 32

// Secrets derives what a member device holds of the vault.
func (r RootSecret) Secrets() VaultSecrets {
	return VaultSecrets{vault: r.Vault(), epoch0: r.Epoch0()}
}

// Vault returns the vault-wide subkeys.
func (s VaultSecrets) Vault() VaultKeys { return s.vault }

// Epoch0 returns the secret of the vault's first key epoch.
func (s VaultSecrets) Epoch0() EpochSecret { return s.epoch0 }

// Bytes encodes s: vault ID (32) || rendezvous key (32) || epoch 0 secret
// (32). The caller must keep it secret.
func (s VaultSecrets) Bytes() []byte {
	out := make([]byte, 0, VaultSecretsSize)
	out = append(out, s.vault.ID[:]...)
	out = append(out, s.vault.Rendezvous[:]...)
	return append(out, s.epoch0[:]...)
}

// ParseVaultSecrets decodes what Bytes encodes. Nothing in it can be
// checked without the root secret: the vault ID is checked against the
// vault's genesis when the membership arrives.
func ParseVaultSecrets(b []byte) (VaultSecrets, error) {
	var s VaultSecrets
	if len(b) != VaultSecretsSize {
		return s, fmt.Errorf("vault secrets: %d bytes, want %d", len(b), VaultSecretsSize)
	}
	copy(s.vault.ID[:], b[:32])
	copy(s.vault.Rendezvous[:], b[32:64])
	copy(s.epoch0[:], b[64:])
	return s, nil
}

// NewVaultSecrets assembles VaultSecrets from their parts (a key file).
func NewVaultSecrets(id VaultID, rendezvous [32]byte, epoch0 EpochSecret) VaultSecrets {
	return VaultSecrets{vault: VaultKeys{ID: id, Rendezvous: rendezvous}, epoch0: epoch0}
}
