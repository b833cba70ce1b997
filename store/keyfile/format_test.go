package keyfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weftsync/weft/protocol/keys"
)

func testIdentity(t *testing.T) *keys.Identity {
	t.Helper()
	id, err := keys.IdentityFromSeed(bytes.Repeat([]byte{0x01}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestIdentityRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "device.key")
	id := testIdentity(t)
	if err := SaveIdentity(path, id); err != nil {
		t.Fatalf("SaveIdentity: %v", err)
	}
	got, err := LoadIdentity(path)
	if err != nil {
		t.Fatalf("LoadIdentity: %v", err)
	}
	if got.ID() != id.ID() || !bytes.Equal(got.Seed(), id.Seed()) {
		t.Errorf("got device %v, want %v", got.ID(), id.ID())
	}
}

func TestRootSecretRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vault.secret")
	var r keys.RootSecret
	for i := range r {
		r[i] = byte(i)
	}
	if err := SaveRootSecret(path, r); err != nil {
		t.Fatalf("SaveRootSecret: %v", err)
	}
	got, err := LoadRootSecret(path)
	if err != nil {
		t.Fatalf("LoadRootSecret: %v", err)
	}
	if got != r {
		t.Errorf("got %x, want %x", got, r)
	}
}

// TestFormatGolden pins the text format: a format change must be a new
// version, not an accident.
func TestFormatGolden(t *testing.T) {
	dir := t.TempDir()
	id := testIdentity(t)
	if err := SaveIdentity(filepath.Join(dir, "d"), id); err != nil {
		t.Fatal(err)
	}
	var r keys.RootSecret
	for i := range r {
		r[i] = byte(i)
	}
	if err := SaveRootSecret(filepath.Join(dir, "r"), r); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ file, want string }{
		{"d", "weft-device-key v1\n" +
			"seed 0101010101010101010101010101010101010101010101010101010101010101\n" +
			"id " + id.ID().PeerID() + "\n"},
		{"r", "weft-root-secret v1\n" +
			"secret 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n" +
			"vault " + r.Vault().ID.String() + "\n"},
	}
	for _, tt := range tests {
		got, err := os.ReadFile(filepath.Join(dir, tt.file))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tt.file, got, tt.want)
		}
	}
	if !strings.HasPrefix(id.ID().PeerID(), "12D3KooW") {
		t.Errorf("peer ID %q does not look like an ed25519 peer ID", id.ID().PeerID())
	}
}

func TestLoadIdentityCorrupt(t *testing.T) {
	id := testIdentity(t)
	seed := "0101010101010101010101010101010101010101010101010101010101010101"
	good := "weft-device-key v1\nseed " + seed + "\nid " + id.ID().PeerID() + "\n"
	var r keys.RootSecret
	root := "weft-root-secret v1\nsecret " + strings.Repeat("00", 32) + "\nvault " + r.Vault().ID.String() + "\n"
	tests := []struct {
		name, content string
		want          error // nil: loads
		msg           string
	}{
		{"good", good, nil, ""},
		{"no final newline", strings.TrimSuffix(good, "\n"), nil, ""},
		{"CRLF", strings.ReplaceAll(good, "\n", "\r\n"), nil, ""},
		{"empty", "", ErrCorrupt, "not a weft key file"},
		{"raw hex seed", seed + "\n", ErrCorrupt, "not a weft key file"},
		{"root secret file", root, ErrWrongKind, "holds a weft-root-secret"},
		{"newer version", strings.Replace(good, " v1", " v2", 1), ErrUnsupportedVersion, "newer weft"},
		{"bad version", strings.Replace(good, " v1", " vx", 1), ErrCorrupt, ""},
		{"unknown kind", strings.Replace(good, "weft-device-key", "weft-other", 1), ErrCorrupt, ""},
		{"truncated", good[:40], ErrCorrupt, ""},
		{"missing id line", strings.SplitAfterN(good, "\n", 3)[0] + strings.SplitAfterN(good, "\n", 3)[1], ErrCorrupt, "2 lines, want 3"},
		{"extra line", good + "more stuff\n", ErrCorrupt, "4 lines, want 3"},
		{"lines swapped", "weft-device-key v1\nid " + id.ID().PeerID() + "\nseed " + seed + "\n", ErrCorrupt, `line 2 is not "seed <value>"`},
		{"bad hex", strings.Replace(good, "seed 01", "seed 0g", 1), ErrCorrupt, "seed"},
		{"short seed", strings.Replace(good, "seed 0101", "seed ", 1), ErrCorrupt, "60 hex digits, want 64"},
		{"flipped seed digit", strings.Replace(good, "seed 01", "seed 03", 1), ErrCorrupt, "the seed gives device"},
		{"wrong id", strings.Replace(good, "id 12D3KooW", "id 12D3KooX", 1), ErrCorrupt, "but the file records"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "device.key")
			if err := Save(path, []byte(tt.content)); err != nil {
				t.Fatal(err)
			}
			got, err := LoadIdentity(path)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				if got.ID() != id.ID() {
					t.Errorf("got device %v, want %v", got.ID(), id.ID())
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("message %q does not contain %q", err, tt.msg)
			}
			if strings.Contains(err.Error(), "0101010101") {
				t.Errorf("message %q quotes the secret", err)
			}
		})
	}
}

func TestLoadRootSecretCorrupt(t *testing.T) {
	var r keys.RootSecret
	good := "weft-root-secret v1\nsecret " + strings.Repeat("00", 32) + "\nvault " + r.Vault().ID.String() + "\n"
	tests := []struct {
		name, content string
		want          error
	}{
		{"flipped secret digit", strings.Replace(good, "secret 00", "secret 01", 1), ErrCorrupt},
		{"device key file", "weft-device-key v1\nseed " + strings.Repeat("00", 32) + "\nid x\n", ErrWrongKind},
		{"missing vault line", strings.Join(strings.SplitAfter(good, "\n")[:2], ""), ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "vault.secret")
			if err := Save(path, []byte(tt.content)); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadRootSecret(path); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestTypedLoadsCheckPermissions(t *testing.T) {
	skipOnWindows(t)
	path := filepath.Join(t.TempDir(), "device.key")
	if err := SaveIdentity(path, testIdentity(t)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIdentity(path); !errors.Is(err, ErrInsecurePermissions) {
		t.Errorf("got %v, want ErrInsecurePermissions", err)
	}
}

func TestVaultSecretsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vault.secrets")
	root := keys.RootSecret{7, 7, 7}
	s := root.Secrets()
	if err := SaveVaultSecrets(path, s); err != nil {
		t.Fatalf("SaveVaultSecrets: %v", err)
	}
	got, err := LoadVaultSecrets(path)
	if err != nil {
		t.Fatalf("LoadVaultSecrets: %v", err)
	}
	if got != s || got.Vault() != root.Vault() || got.Epoch0() != root.Epoch0() {
		t.Errorf("got %x, want %x", got.Bytes(), s.Bytes())
	}
	data, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), hexOf(root[:])) {
		t.Errorf("the file holds the root secret")
	}
	// One flipped digit in any value is caught by the check line.
	lines := strings.Split(string(data), "\n")
	for i := 1; i <= 3; i++ {
		bad := slices.Clone(lines)
		n, v, _ := strings.Cut(bad[i], " ")
		d := "0"
		if v[0] == '0' {
			d = "1"
		}
		bad[i] = n + " " + d + v[1:]
		p := filepath.Join(t.TempDir(), "bad.secrets")
		if err := Save(p, []byte(strings.Join(bad, "\n"))); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadVaultSecrets(p); !errors.Is(err, ErrCorrupt) {
			t.Errorf("flipped %s: got %v, want %v", n, err, ErrCorrupt)
		}
	}
	if _, err := LoadRootSecret(path); !errors.Is(err, ErrWrongKind) {
		t.Errorf("loaded as a root secret: got %v, want %v", err, ErrWrongKind)
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
