package member

import (
	"bytes"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	"github.com/ipfs/go-cid"
	mh "github.com/multiformats/go-multihash"
	_ "github.com/multiformats/go-multihash/register/blake3" // BLAKE3 for CIDs

	"github.com/weftsync/weft/protocol/keys"
)

// Format is the record format version this code writes and accepts.
const Format = 1

// MaxRecordSize bounds an encoded record; checked before decoding. A
// record holding MaxKeys sealed epoch secrets fits.
const MaxRecordSize = 16 << 10

// MaxKeys bounds the sealed epoch secrets of one record: the remaining
// members of a revocation, or the epochs after 0 sealed to an added device.
const MaxKeys = 128

// Op is what a record does.
type Op uint8

// Operations. Codes are never reused.
const (
	OpGenesis     Op = 1 // the creating device admits itself as admin; seq 1 only
	OpAdd         Op = 2 // admit Device with Role
	OpRevoke      Op = 3 // revoke Device; starts key epoch Epoch; Device's entries after Upto are void
	OpAddRelay    Op = 4 // Relay serves the vault
	OpRemoveRelay Op = 5 // Relay no longer serves the vault
)

func (o Op) String() string {
	switch o {
	case OpGenesis:
		return "genesis"
	case OpAdd:
		return "add"
	case OpRevoke:
		return "revoke"
	case OpAddRelay:
		return "add-relay"
	case OpRemoveRelay:
		return "remove-relay"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Role is a member's authority.
type Role uint8

// Roles.
const (
	RoleMember Role = 1 // reads and writes the vault
	RoleAdmin  Role = 2 // also admits and revokes devices
)

func (r Role) String() string {
	switch r {
	case RoleMember:
		return "member"
	case RoleAdmin:
		return "admin"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// Record is one signed membership change. The encoding is a canonical CBOR
// array in field order (docs/protocol/membership.md); Sig covers the
// encoding of every other field, prefixed by sigDomain. A genesis also
// carries the vault's public key and its signature (genesis.go), which
// prove that its maker holds the vault's root secret.
type Record struct {
	_      struct{} `cbor:",toarray"`
	Format uint8
	Vault  keys.VaultID
	Seq    uint64
	Prev   []byte // CID bytes of the previous record; empty for Seq 1
	Op     Op
	Device keys.DeviceID // OpGenesis, OpAdd, OpRevoke
	Role   Role          // OpGenesis, OpAdd
	Relay  string        // OpAddRelay, OpRemoveRelay: the relay's multiaddr with /p2p/ID
	Epoch  uint32        // OpRevoke: the key epoch that starts
	Upto   uint64        // OpRevoke: the revoked device's last accepted sequence number
	Keys   []SealedKey   // OpRevoke, OpAdd: sealed epoch secrets (see SealedKey)
	Time   int64         // signer's wall clock, unix milliseconds (informational)
	// VaultKey and VaultSig are set in a genesis only, nil otherwise:
	// the vault's public key (32 bytes, keys.VaultPublicKey), which must
	// hash to Vault, and its signature (64 bytes) of vaultSigningBytes.
	VaultKey []byte
	VaultSig []byte
	Signer   keys.DeviceID
	Sig      []byte
}

// SealedKey is one epoch secret sealed to one device
// (keys.SealEpochSecret). In a revocation, Keys holds the new epoch's secret
// sealed to every remaining member, one each, sorted by device ID; in an
// add, Keys[i] is the secret of epoch i+1 sealed to the added device, for
// every epoch after 0 up to the current one (epoch 0 derives from the root
// secret the device receives at pairing).
type SealedKey struct {
	_      struct{} `cbor:",toarray"`
	Device keys.DeviceID
	Sealed []byte
}

const sigDomain = "weft/member/v1\x00"

var (
	encMode cbor.EncMode
	decMode cbor.DecMode
)

func init() {
	var err error
	if encMode, err = cbor.CoreDetEncOptions().EncMode(); err != nil {
		panic("member: invariant: cbor enc mode: " + err.Error())
	}
	decMode, err = cbor.DecOptions{
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		IndefLength:      cbor.IndefLengthForbidden,
		MaxArrayElements: 2 * MaxKeys,
		MaxMapPairs:      64,
		MaxNestedLevels:  4,
	}.DecMode()
	if err != nil {
		panic("member: invariant: cbor dec mode: " + err.Error())
	}
}

// signingBytes is what the signature covers: the record with Sig empty.
func (r Record) signingBytes() []byte {
	r.Sig = nil
	b, err := encMode.Marshal(r)
	if err != nil {
		panic("member: invariant: encoding a record cannot fail: " + err.Error())
	}
	return append([]byte(sigDomain), b...)
}

// Sign fills Signer and Sig.
func (r *Record) Sign(id *keys.Identity) {
	r.Signer = id.ID()
	r.Sig = id.Sign(r.signingBytes())
}

// Encode returns the canonical bytes of a signed record.
func (r Record) Encode() []byte {
	b, err := encMode.Marshal(r)
	if err != nil {
		panic("member: invariant: encoding a record cannot fail: " + err.Error())
	}
	return b
}

// CID names a record: CIDv1, dag-cbor, BLAKE3-256 of its encoding.
func (r Record) CID() cid.Cid {
	sum, err := mh.Sum(r.Encode(), mh.BLAKE3, 32)
	if err != nil {
		panic("member: invariant: blake3 multihash: " + err.Error())
	}
	return cid.NewCidV1(cid.DagCBOR, sum)
}

// Decode parses a record from untrusted bytes. It checks the size before
// decoding and rejects any encoding that is not the canonical one, so every
// record has one byte form and one CID. Of a genesis it checks the vault
// proof (ErrVaultKey, ErrVaultSignature: see checkVaultProof), which needs
// no state. It does not check the device signature or the chain: State.Apply
// does.
func Decode(b []byte) (Record, error) {
	var r Record
	if len(b) > MaxRecordSize {
		return r, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(b), MaxRecordSize)
	}
	if err := decMode.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("decoding membership record: %w", err)
	}
	if r.Format != Format {
		return r, fmt.Errorf("%w: %d", ErrUnknownFormat, r.Format)
	}
	if r.Keys != nil && len(r.Keys) == 0 {
		// An empty array and null would both mean "no keys"; only null
		// (what Encode writes for none) is canonical.
		return r, fmt.Errorf("%w: empty key list", ErrNonCanonical)
	}
	if (r.VaultKey != nil && len(r.VaultKey) == 0) || (r.VaultSig != nil && len(r.VaultSig) == 0) {
		// Likewise only null means "no vault key" in a record other than a
		// genesis.
		return r, fmt.Errorf("%w: empty vault key or signature", ErrNonCanonical)
	}
	if !bytes.Equal(r.Encode(), b) {
		return r, ErrNonCanonical
	}
	if r.Op == OpGenesis {
		if err := r.checkVaultProof(); err != nil {
			return r, err
		}
	}
	return r, nil
}
