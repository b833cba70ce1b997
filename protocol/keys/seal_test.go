package keys

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"

	"golang.org/x/crypto/curve25519"
)

// The golden values below were computed independently with Python's
// `cryptography` package (Ed25519/X25519, HKDF, ChaCha20-Poly1305) plus a
// hand-written HChaCha20 checked against the XChaCha20 draft's test
// vector, and the Edwards-to-Montgomery map in plain integer arithmetic:
// testdata/seal_ref.py (python3 testdata/seal_ref.py prints them).

func TestX25519Golden(t *testing.T) {
	tests := []struct {
		name, seed, edPub, xPub, xPriv string
	}{
		{
			name:  "RFC 8032 test 1",
			seed:  "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
			edPub: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
			xPub:  "d85e07ec22b0ad881537c2f44d662d1a143cf830c57aca4305d85c7a90f6b62e",
			xPriv: "307c83864f2833cb427a2ef1c00a013cfdff2768d980c0a3a520f006904de94f",
		},
		{
			name: "seed of sevens",
			seed: "0707070707070707070707070707070707070707070707070707070707070707",
			xPub: "761d88ec830413919dfe9d4d1d56f17e653c8c994082df5b137b90a0ae6edf74",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := IdentityFromSeed(mustHex(t, tt.seed))
			if err != nil {
				t.Fatal(err)
			}
			d := id.ID()
			if tt.edPub != "" && hex.EncodeToString(d[:]) != tt.edPub {
				t.Fatalf("ed25519 public: got %x, want %s", d, tt.edPub)
			}
			x, err := d.X25519()
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(x[:]); got != tt.xPub {
				t.Errorf("X25519 public: got %s, want %s", got, tt.xPub)
			}
			priv := id.X25519Private()
			if tt.xPriv != "" && hex.EncodeToString(priv[:]) != tt.xPriv {
				t.Errorf("X25519 private: got %x, want %s", priv, tt.xPriv)
			}
		})
	}
}

// TestX25519MatchesPrivate checks the two conversions agree for many keys:
// the X25519 public key of the converted private scalar is the converted
// public key.
func TestX25519MatchesPrivate(t *testing.T) {
	for i := range 200 {
		id, err := GenerateIdentity(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		priv := id.X25519Private()
		want, err := curve25519.X25519(priv[:], curve25519.Basepoint)
		if err != nil {
			t.Fatal(err)
		}
		got, err := id.ID().X25519()
		if err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
		if !bytes.Equal(got[:], want) {
			t.Fatalf("key %d: got %x, want %x", i, got, want)
		}
	}
}

func TestX25519RejectsNonPoints(t *testing.T) {
	var neutral DeviceID
	neutral[0] = 1 // y = 1
	var big DeviceID
	for i := range big {
		big[i] = 0xff
	}
	big[31] = 0x7f // y = 2^255-1 >= p
	var notOnCurve DeviceID
	notOnCurve[0] = 2 // y = 2: (y^2-1)/(d y^2+1) is not a square
	for name, d := range map[string]DeviceID{"neutral": neutral, "unreduced": big, "not on curve": notOnCurve} {
		if _, err := d.X25519(); !errors.Is(err, ErrNotOnCurve) {
			t.Errorf("%s: got %v, want %v", name, err, ErrNotOnCurve)
		}
		if _, err := SealEpochSecret(rand.Reader, d, VaultID{}, 1, EpochSecret{}); !errors.Is(err, ErrNotOnCurve) {
			t.Errorf("%s: seal: got %v, want %v", name, err, ErrNotOnCurve)
		}
	}
}

func TestSealEpochSecretGolden(t *testing.T) {
	id, err := IdentityFromSeed(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	var vault VaultID
	var secret EpochSecret
	for i := range vault {
		vault[i] = byte(i + 1)
		secret[i] = byte(0x40 + i)
	}
	eph := bytes.Repeat([]byte{0x11}, 32)
	sealed, err := SealEpochSecret(bytes.NewReader(eph), id.ID(), vault, 3, secret)
	if err != nil {
		t.Fatal(err)
	}
	const want = "7b4e909bbe7ffe44c465a220037d608ee35897d31ef972f07f74892cb0f73f13" +
		"9de4069faf7c044436adb29bd59ff3b9cd4b51af0a8654599fd79c621bf76827" +
		"06f8eea138c3416689fa3ece7034cd71"
	if got := hex.EncodeToString(sealed); got != want {
		t.Fatalf("sealed: got %s, want %s", got, want)
	}
	if len(sealed) != SealedSecretSize {
		t.Fatalf("size: got %d, want %d", len(sealed), SealedSecretSize)
	}
	got, err := id.OpenEpochSecret(vault, 3, mustHex(t, want))
	if err != nil || got != secret {
		t.Fatalf("open: got %x, %v; want %x", got, err, secret)
	}
}

func TestSealEpochSecretRejects(t *testing.T) {
	to, other := must(GenerateIdentity(rand.Reader)), must(GenerateIdentity(rand.Reader))
	vault := VaultID{9}
	secret := must(NewEpochSecret(rand.Reader))
	sealed := must(SealEpochSecret(rand.Reader, to.ID(), vault, 2, secret))
	if got, err := to.OpenEpochSecret(vault, 2, sealed); err != nil || got != secret {
		t.Fatalf("round trip: got %x, %v; want %x", got, err, secret)
	}
	again := must(SealEpochSecret(rand.Reader, to.ID(), vault, 2, secret))
	if bytes.Equal(again, sealed) {
		t.Fatal("two sealings of one secret are equal; the ephemeral key is not fresh")
	}
	flipped := bytes.Clone(sealed)
	flipped[40] ^= 1
	tests := []struct {
		name   string
		id     *Identity
		vault  VaultID
		epoch  uint32
		sealed []byte
	}{
		{"wrong recipient", other, vault, 2, sealed},
		{"wrong vault", to, VaultID{8}, 2, sealed},
		{"wrong epoch", to, vault, 3, sealed},
		{"altered", to, vault, 2, flipped},
		{"truncated", to, vault, 2, sealed[:len(sealed)-1]},
		{"empty", to, vault, 2, nil},
		{"low-order ephemeral", to, vault, 2, append(make([]byte, 32), sealed[32:]...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.id.OpenEpochSecret(tt.vault, tt.epoch, tt.sealed); !errors.Is(err, ErrSealedSecret) {
				t.Fatalf("got %v, want %v", err, ErrSealedSecret)
			}
		})
	}
}

func FuzzOpenEpochSecret(f *testing.F) {
	id := must(IdentityFromSeed(bytes.Repeat([]byte{7}, 32)))
	f.Add(must(SealEpochSecret(bytes.NewReader(bytes.Repeat([]byte{1}, 32)), id.ID(), VaultID{}, 1, EpochSecret{5})), uint32(1))
	f.Add([]byte{}, uint32(0))
	f.Fuzz(func(t *testing.T, sealed []byte, epoch uint32) {
		s, err := id.OpenEpochSecret(VaultID{}, epoch, sealed)
		if err != nil {
			return
		}
		// Whatever opens was sealed by someone with the secret: resealing
		// it opens to the same secret.
		re := must(SealEpochSecret(rand.Reader, id.ID(), VaultID{}, epoch, s))
		if back, err := id.OpenEpochSecret(VaultID{}, epoch, re); err != nil || back != s {
			t.Fatalf("reseal: got %x, %v; want %x", back, err, s)
		}
	})
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
