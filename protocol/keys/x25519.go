package keys

import (
	"crypto/ed25519"
	"crypto/sha512"
	"fmt"
	"math/big"
)

// A device has one key pair, ed25519. Sealing a secret to a device needs
// Diffie-Hellman, so the same key is also used as an X25519 key through the
// birational map between the twisted Edwards curve and Curve25519 (the
// conversion libsodium calls crypto_sign_ed25519_pk_to_curve25519):
//
//	public:  u = (1 + y) / (1 - y) mod p, where y is the Edwards point's
//	         y-coordinate (the key's low 255 bits, little-endian)
//	private: the clamped first 32 bytes of SHA-512(seed), which is the
//	         ed25519 secret scalar itself
//
// so X25519(private, 9) equals the converted public key (a test checks it
// for many keys). Public keys are public, so the conversion uses math/big
// and need not be constant-time.

var (
	fieldP = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))
	// edwardsD is the Edwards curve constant d = -121665/121666 mod p.
	edwardsD = func() *big.Int {
		num := new(big.Int).Sub(fieldP, big.NewInt(121665))
		den := new(big.Int).ModInverse(big.NewInt(121666), fieldP)
		return num.Mul(num, den).Mod(num, fieldP)
	}()
)

// X25519 returns the device's public key as an X25519 (Montgomery u)
// coordinate. It returns ErrNotOnCurve when d is not the encoding of a
// point of the ed25519 curve (a y not below p, no x for that y) or is a
// point whose u is undefined (y = 1, the neutral element).
func (d DeviceID) X25519() ([32]byte, error) {
	var out [32]byte
	le := d
	signBit := le[31] >> 7
	le[31] &= 0x7f
	y := new(big.Int).SetBytes(reverse(le[:]))
	if y.Cmp(fieldP) >= 0 {
		return out, fmt.Errorf("device key %s: y not reduced: %w", d.Short(), ErrNotOnCurve)
	}
	// x^2 = (y^2 - 1) / (d y^2 + 1) must be a square; x = 0 only with the
	// sign bit clear.
	y2 := new(big.Int).Mul(y, y)
	y2.Mod(y2, fieldP)
	num := new(big.Int).Sub(y2, big.NewInt(1))
	num.Mod(num, fieldP)
	den := new(big.Int).Mul(edwardsD, y2)
	den.Add(den, big.NewInt(1)).Mod(den, fieldP)
	x2 := new(big.Int).Mul(num, new(big.Int).ModInverse(den, fieldP))
	x2.Mod(x2, fieldP)
	if x2.Sign() == 0 && signBit == 1 {
		return out, fmt.Errorf("device key %s: negative zero x: %w", d.Short(), ErrNotOnCurve)
	}
	if x2.Sign() != 0 && big.Jacobi(x2, fieldP) != 1 {
		return out, fmt.Errorf("device key %s: %w", d.Short(), ErrNotOnCurve)
	}
	oneMinusY := new(big.Int).Sub(big.NewInt(1), y)
	oneMinusY.Mod(oneMinusY, fieldP)
	if oneMinusY.Sign() == 0 {
		return out, fmt.Errorf("device key %s: neutral point: %w", d.Short(), ErrNotOnCurve)
	}
	u := new(big.Int).Add(big.NewInt(1), y)
	u.Mul(u, new(big.Int).ModInverse(oneMinusY, fieldP)).Mod(u, fieldP)
	u.FillBytes(out[:])
	reverseInPlace(out[:])
	return out, nil
}

// X25519Private returns the device's private key as an X25519 scalar,
// clamped. The caller must keep it secret.
func (i *Identity) X25519Private() [32]byte { return x25519Private(i.priv) }

// x25519Private is the X25519 scalar of an ed25519 private key, clamped.
func x25519Private(priv ed25519.PrivateKey) [32]byte {
	h := sha512.Sum512(priv.Seed())
	var s [32]byte
	copy(s[:], h[:32])
	s[0] &= 248
	s[31] &= 127
	s[31] |= 64
	return s
}

func reverse(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[len(b)-1-i] = c
	}
	return out
}

func reverseInPlace(b []byte) {
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
}
