package keyfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/weftsync/weft/protocol/keys"
)

// File kinds, the first word of a key file's first line.
const (
	kindDevice  = "weft-device-key"
	kindRoot    = "weft-root-secret"
	kindSecrets = "weft-vault-secrets"
	version     = "v1"
)

var versionRE = regexp.MustCompile(`^v[0-9]+$`)

// SaveIdentity saves a device identity to path (see Save and the format in
// the package comment).
func SaveIdentity(path string, id *keys.Identity) error {
	return Save(path, encode(kindDevice,
		"seed", hex.EncodeToString(id.Seed()),
		"id", id.ID().PeerID()))
}

// LoadIdentity loads a device identity saved by SaveIdentity. Besides Load's
// errors, it returns ErrCorrupt, ErrWrongKind or ErrUnsupportedVersion
// (wrapped, naming the file and line) for contents it cannot trust,
// including a seed that does not give the recorded device ID.
func LoadIdentity(path string) (*keys.Identity, error) {
	data, err := Load(path)
	if err != nil {
		return nil, err
	}
	v, err := decode(path, data, kindDevice, "seed", "id")
	if err != nil {
		return nil, err
	}
	seed, err := decodeHex32(path, "seed", v[0])
	if err != nil {
		return nil, err
	}
	id, err := keys.IdentityFromSeed(seed[:])
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w: %v", path, ErrCorrupt, err)
	}
	if got := id.ID().PeerID(); got != v[1] {
		return nil, fmt.Errorf("key file %s: %w: the seed gives device %s, but the file records %.64q", path, ErrCorrupt, got, v[1])
	}
	return id, nil
}

// SaveRootSecret saves a vault's root secret to path (see Save and the
// format in the package comment).
func SaveRootSecret(path string, r keys.RootSecret) error {
	return Save(path, encode(kindRoot,
		"secret", hex.EncodeToString(r[:]),
		"vault", r.Vault().ID.String()))
}

// LoadRootSecret loads a root secret saved by SaveRootSecret, with the same
// errors as LoadIdentity; a secret that does not give the recorded vault ID
// is ErrCorrupt.
func LoadRootSecret(path string) (keys.RootSecret, error) {
	data, err := Load(path)
	if err != nil {
		return keys.RootSecret{}, err
	}
	v, err := decode(path, data, kindRoot, "secret", "vault")
	if err != nil {
		return keys.RootSecret{}, err
	}
	secret, err := decodeHex32(path, "secret", v[0])
	if err != nil {
		return keys.RootSecret{}, err
	}
	r := keys.RootSecret(secret)
	if got := r.Vault().ID.String(); got != v[1] {
		return keys.RootSecret{}, fmt.Errorf("key file %s: %w: the secret gives vault %s, but the file records %.64q", path, ErrCorrupt, got, v[1])
	}
	return r, nil
}

// SaveVaultSecrets saves what a member device holds of a vault
// (keys.VaultSecrets) to path (see Save and the format in the package
// comment).
func SaveVaultSecrets(path string, s keys.VaultSecrets) error {
	e0 := s.Epoch0()
	rv := s.Vault().Rendezvous
	return Save(path, encode(kindSecrets,
		"vault", s.Vault().ID.String(),
		"rendezvous", hex.EncodeToString(rv[:]),
		"epoch0", hex.EncodeToString(e0[:]),
		"check", secretsCheck(s)))
}

// secretsCheck is the check line of a vault-secrets file: nothing in the
// secrets derives from the rest, so a checksum stands in for the derived
// last line of the other kinds and catches a damaged value on load.
func secretsCheck(s keys.VaultSecrets) string {
	sum := sha256.Sum256(append([]byte(kindSecrets+"\x00"), s.Bytes()...))
	return hex.EncodeToString(sum[:8])
}

// LoadVaultSecrets loads what SaveVaultSecrets saved, with the same errors
// as LoadIdentity.
func LoadVaultSecrets(path string) (keys.VaultSecrets, error) {
	data, err := Load(path)
	if err != nil {
		return keys.VaultSecrets{}, err
	}
	v, err := decode(path, data, kindSecrets, "vault", "rendezvous", "epoch0", "check")
	if err != nil {
		return keys.VaultSecrets{}, err
	}
	id, err := decodeHex32(path, "vault", v[0])
	if err != nil {
		return keys.VaultSecrets{}, err
	}
	rv, err := decodeHex32(path, "rendezvous", v[1])
	if err != nil {
		return keys.VaultSecrets{}, err
	}
	e0, err := decodeHex32(path, "epoch0", v[2])
	if err != nil {
		return keys.VaultSecrets{}, err
	}
	out := keys.NewVaultSecrets(keys.VaultID(id), rv, keys.EpochSecret(e0))
	if secretsCheck(out) != v[3] {
		return keys.VaultSecrets{}, fmt.Errorf("key file %s: %w: the check line does not match the secrets", path, ErrCorrupt)
	}
	return out, nil
}

// encode builds a key file: the header line, then one "name value" line
// per pair.
func encode(kind string, pairs ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s\n", kind, version)
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(&b, "%s %s\n", pairs[i], pairs[i+1])
	}
	return b.Bytes()
}

// decode checks a key file's header against kind and returns the values of
// the named lines, which must follow in that order and be all there is.
// Its errors never quote the file's contents: a line may hold a secret, and
// error messages end up in logs.
func decode(path string, data []byte, kind string, names ...string) ([]string, error) {
	text := strings.TrimSuffix(string(data), "\n")
	lines := strings.Split(text, "\n")
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
	hdr := strings.Split(lines[0], " ")
	switch {
	case len(hdr) != 2 || !strings.HasPrefix(hdr[0], "weft-"):
		return nil, fmt.Errorf("key file %s: %w: the first line is not %q: not a weft key file", path, ErrCorrupt, kind+" "+version)
	case hdr[0] != kind && (hdr[0] == kindDevice || hdr[0] == kindRoot || hdr[0] == kindSecrets):
		return nil, fmt.Errorf("key file %s: %w: it holds a %s, want a %s", path, ErrWrongKind, hdr[0], kind)
	case hdr[0] != kind:
		return nil, fmt.Errorf("key file %s: %w: the first line is not %q", path, ErrCorrupt, kind+" "+version)
	case hdr[1] != version && versionRE.MatchString(hdr[1]):
		return nil, fmt.Errorf("key file %s: %w: format %s, this weft reads %s (was it written by a newer weft?)", path, ErrUnsupportedVersion, hdr[1], version)
	case hdr[1] != version:
		return nil, fmt.Errorf("key file %s: %w: the first line is not %q", path, ErrCorrupt, kind+" "+version)
	}
	if len(lines)-1 != len(names) {
		return nil, fmt.Errorf("key file %s: %w: %d lines, want %d", path, ErrCorrupt, len(lines), len(names)+1)
	}
	values := make([]string, len(names))
	for i, name := range names {
		n, v, ok := strings.Cut(lines[i+1], " ")
		if !ok || n != name || v == "" {
			return nil, fmt.Errorf("key file %s: %w: line %d is not %q", path, ErrCorrupt, i+2, name+" <value>")
		}
		values[i] = v
	}
	return values, nil
}

// decodeHex32 decodes a 32-byte hex value.
func decodeHex32(path, name, v string) ([32]byte, error) {
	var out [32]byte
	if len(v) != 64 {
		return out, fmt.Errorf("key file %s: %w: %s has %d hex digits, want 64", path, ErrCorrupt, name, len(v))
	}
	if _, err := hex.Decode(out[:], []byte(v)); err != nil {
		return out, fmt.Errorf("key file %s: %w: %s: %v", path, ErrCorrupt, name, err)
	}
	return out, nil
}
