package member

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/hkdf"

	"github.com/weftsync/weft/protocol/keys"
)

// Invite is a one-time pairing code. The inviting device keeps it until it
// is used or expires; the joining device presents proof that it holds the
// code's secret, and receives the vault keys wrapped under a key derived
// from that secret. The code travels out of band (typed, pasted, a QR code).
type Invite struct {
	_       struct{} `cbor:",toarray"`
	Version uint8
	Inviter keys.DeviceID
	Secret  [16]byte
	Expires int64    // unix seconds
	Addrs   []string // multiaddrs where the inviter listens
}

// InviteVersion is the invite format version.
const InviteVersion = 1

// invitePrefix starts every invite code, so a code is recognisable and a
// paste of something else fails fast.
const invitePrefix = "weft1"

// MaxInviteSize bounds a decoded invite.
const MaxInviteSize = 2 << 10

var inviteEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// ConfirmWait bounds how long a join by a code made with confirmation
// waits for a person's approval: longer than a person takes to compare a
// few words, short enough that a forgotten one ends. The inviter holds a
// join this long; the joiner waits this long and a margin.
const ConfirmWait = 10 * time.Minute

// NewInvite makes an invite from rand, valid until expires (unix seconds).
func NewInvite(rand io.Reader, inviter keys.DeviceID, addrs []string, expires int64) (Invite, error) {
	inv := Invite{Version: InviteVersion, Inviter: inviter, Expires: expires, Addrs: addrs}
	if _, err := io.ReadFull(rand, inv.Secret[:]); err != nil {
		return Invite{}, fmt.Errorf("invite secret: %w", err)
	}
	return inv, nil
}

// String is the code a person passes on: "weft1" and lower-case base32 of
// the canonical CBOR of the invite followed by a 4-byte SHA-256 checksum.
func (inv Invite) String() string {
	b, err := encMode.Marshal(inv)
	if err != nil {
		panic("member: invariant: encoding an invite cannot fail: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return invitePrefix + inviteEncoding.EncodeToString(append(b, sum[:4]...))
}

// ParseInvite parses a code. Case and surrounding or embedded whitespace are
// ignored (codes get wrapped in chats and emails). It does not check expiry:
// the inviter does, against its own clock, with CheckExpiry.
func ParseInvite(s string) (Invite, error) {
	var inv Invite
	s = strings.ToLower(strings.Join(strings.Fields(s), ""))
	if !strings.HasPrefix(s, invitePrefix) {
		return inv, fmt.Errorf("%w: it must start with %q", ErrInviteMalformed, invitePrefix)
	}
	body := s[len(invitePrefix):]
	if inviteEncoding.DecodedLen(len(body)) > MaxInviteSize+4 {
		return inv, fmt.Errorf("%w: too long", ErrInviteMalformed)
	}
	raw, err := inviteEncoding.DecodeString(body)
	if err != nil || len(raw) < 5 {
		return inv, fmt.Errorf("%w: not base32", ErrInviteMalformed)
	}
	b, check := raw[:len(raw)-4], raw[len(raw)-4:]
	sum := sha256.Sum256(b)
	if !hmac.Equal(sum[:4], check) {
		return inv, ErrInviteChecksum
	}
	if err := decMode.Unmarshal(b, &inv); err != nil {
		return inv, fmt.Errorf("%w: %v", ErrInviteMalformed, err)
	}
	if inv.Version != InviteVersion {
		return inv, fmt.Errorf("%w: unknown version %d", ErrInviteMalformed, inv.Version)
	}
	return inv, nil
}

// CheckExpiry returns ErrInviteExpired if the invite has expired at now
// (unix seconds).
func (inv Invite) CheckExpiry(now int64) error {
	if now >= inv.Expires {
		return ErrInviteExpired
	}
	return nil
}

// Proof is what the joining device sends to show it holds the code: an
// HMAC-SHA256 under the invite secret that binds both devices, so a proof
// seen on one connection cannot be replayed by another device.
func (inv Invite) Proof(joiner keys.DeviceID) []byte {
	m := hmac.New(sha256.New, inv.Secret[:])
	m.Write([]byte("weft/pair/v1 proof\x00"))
	m.Write(inv.Inviter[:])
	m.Write(joiner[:])
	return m.Sum(nil)
}

// SASWords is how many words Words gives: 44 bits.
const SASWords = 4

// Words is the short authentication string of a join with this code by
// joiner: four BIP-39 words that the inviting device shows beside a join
// waiting for approval (`weft invite --confirm`) and the joining device
// shows while it waits, so a person can tell their own device's join from
// that of someone else who saw the code. They bind the code's secret and
// both devices; someone else who saw the code gets other words for its
// own device and, not knowing the real joiner's key beforehand, cannot
// choose one whose words match (44 bits).
func (inv Invite) Words(joiner keys.DeviceID) string {
	m := hmac.New(sha256.New, inv.Secret[:])
	m.Write([]byte("weft/pair/v1 sas\x00"))
	m.Write(inv.Inviter[:])
	m.Write(joiner[:])
	return strings.Join(keys.Words(m.Sum(nil), SASWords), " ")
}

// CheckProof verifies a joiner's proof in constant time.
func (inv Invite) CheckProof(joiner keys.DeviceID, proof []byte) error {
	if !hmac.Equal(inv.Proof(joiner), proof) {
		return ErrInviteProof
	}
	return nil
}

// wrapKey derives the key that wraps the vault keys for joiner.
func (inv Invite) wrapKey(joiner keys.DeviceID) []byte {
	k := make([]byte, chacha20poly1305.KeySize)
	r := hkdf.New(sha256.New, inv.Secret[:], joiner[:], []byte("weft/pair/v1 wrap"))
	if _, err := io.ReadFull(r, k); err != nil {
		panic("member: invariant: hkdf: " + err.Error())
	}
	return k
}

// Wrap seals secret for joiner under the invite's key. The libp2p channel
// is already encrypted and authenticated; this second layer means only the
// holder of the code can read the vault keys even if the channel's peer
// were not who the code names.
func (inv Invite) Wrap(rand io.Reader, joiner keys.DeviceID, secret []byte) ([]byte, error) {
	aead, err := chacha20poly1305.NewX(inv.wrapKey(joiner))
	if err != nil {
		return nil, fmt.Errorf("wrap cipher: %w", err)
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(secret)+aead.Overhead())
	if _, err := io.ReadFull(rand, nonce); err != nil {
		return nil, fmt.Errorf("wrap nonce: %w", err)
	}
	return aead.Seal(nonce, nonce, secret, joiner[:]), nil
}

// Unwrap opens what Wrap sealed.
func (inv Invite) Unwrap(joiner keys.DeviceID, sealed []byte) ([]byte, error) {
	aead, err := chacha20poly1305.NewX(inv.wrapKey(joiner))
	if err != nil {
		return nil, fmt.Errorf("wrap cipher: %w", err)
	}
	if len(sealed) < aead.NonceSize()+aead.Overhead() {
		return nil, fmt.Errorf("%w: wrapped keys too short", ErrInviteProof)
	}
	out, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], joiner[:])
	if err != nil {
		return nil, fmt.Errorf("%w: wrapped keys do not open", ErrInviteProof)
	}
	return out, nil
}
