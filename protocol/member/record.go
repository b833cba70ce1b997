package member

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	"github.com/ipfs/go-cid"
	mh "github.com/multiformats/go-multihash"
	_ "github.com/multiformats/go-multihash/register/blake3" // BLAKE3 for CIDs

	"github.com/weftsync/weft/protocol/keys"
)

// Record formats. Format 1 is the first; format 2 adds a device name
// (Name) and the vault's settings (Flags) and the operations that use
// them; format 3 adds the words of a join (Words). This code accepts all
// three, and writes the lowest format that holds what a record needs, so
// that a log stays readable by devices that know an earlier format only
// until something needs the new fields.
const (
	Format  = 1 // the first format
	Format2 = 2 // adds Name and Flags, and OpRecover, OpSetRole, OpRename, OpSettings
	Format3 = 3 // adds Words
)

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

	// Format 2 only.
	OpRecover  Op = 6 // Device (the signer) is admitted as admin by the vault key: the recovery phrase
	OpSetRole  Op = 7 // Device's role becomes Role
	OpRename   Op = 8 // Device's name becomes Name
	OpSettings Op = 9 // the vault's settings become Flags
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
	case OpRecover:
		return "recover"
	case OpSetRole:
		return "set-role"
	case OpRename:
		return "rename"
	case OpSettings:
		return "settings"
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
	// Name and Flags exist in format 2 only (zero in format 1).
	Name  string // OpGenesis, OpAdd, OpRecover (optional), OpRename: the device's name
	Flags uint64 // OpGenesis, OpSettings: the vault's settings (Flag*)
	// Words exists in format 3 only: OpAdd (optional), the words both
	// devices showed for the join (Invite.Words), so every member can show
	// them beside the device that joined.
	Words string
	// VaultKey and VaultSig are set in a genesis and a recovery only, nil
	// otherwise: the vault's public key (32 bytes, keys.VaultPublicKey),
	// which must hash to Vault, and its signature (64 bytes) of
	// vaultSigningBytes.
	VaultKey []byte
	VaultSig []byte
	Signer   keys.DeviceID
	Sig      []byte
}

// recordV1 is a format-1 record's encoding: Record without Name and Flags.
type recordV1 struct {
	_        struct{} `cbor:",toarray"`
	Format   uint8
	Vault    keys.VaultID
	Seq      uint64
	Prev     []byte
	Op       Op
	Device   keys.DeviceID
	Role     Role
	Relay    string
	Epoch    uint32
	Upto     uint64
	Keys     []SealedKey
	Time     int64
	VaultKey []byte
	VaultSig []byte
	Signer   keys.DeviceID
	Sig      []byte
}

// recordV2 is a format-2 record's encoding: Record without Words.
type recordV2 struct {
	_        struct{} `cbor:",toarray"`
	Format   uint8
	Vault    keys.VaultID
	Seq      uint64
	Prev     []byte
	Op       Op
	Device   keys.DeviceID
	Role     Role
	Relay    string
	Epoch    uint32
	Upto     uint64
	Keys     []SealedKey
	Time     int64
	Name     string
	Flags    uint64
	VaultKey []byte
	VaultSig []byte
	Signer   keys.DeviceID
	Sig      []byte
}

// Array lengths of the three formats' encodings.
const (
	fieldsV1 = 16
	fieldsV2 = 18
	fieldsV3 = 19
)

// Vault settings (Record.Flags). Unknown bits are refused.
const (
	// FlagRecoverable: the vault's recovery phrase can admit a device
	// (OpRecover), and every new epoch's secret is also sealed to the vault
	// key, so the phrase opens every epoch. Set at genesis only: it says
	// that devices of the vault hold no root secret (they are given the
	// derived keys.VaultSecrets), which only a vault made that way can
	// promise (docs/security.md, "Recovery").
	FlagRecoverable uint64 = 1 << 0
	// FlagMembersInvite: every member may admit devices as members (not
	// as admins); otherwise only admins admit.
	FlagMembersInvite uint64 = 1 << 1

	knownFlags = FlagRecoverable | FlagMembersInvite
)

// marshal encodes r in its format's array.
func (r Record) marshal() []byte {
	var v any = r
	switch r.Format {
	case Format:
		if r.Name != "" || r.Flags != 0 || r.Words != "" {
			panic("member: invariant: a format-1 record with a name, flags or words")
		}
		v = recordV1{
			Format: r.Format, Vault: r.Vault, Seq: r.Seq, Prev: r.Prev, Op: r.Op, Device: r.Device,
			Role: r.Role, Relay: r.Relay, Epoch: r.Epoch, Upto: r.Upto, Keys: r.Keys, Time: r.Time,
			VaultKey: r.VaultKey, VaultSig: r.VaultSig, Signer: r.Signer, Sig: r.Sig,
		}
	case Format2:
		if r.Words != "" {
			panic("member: invariant: a format-2 record with words")
		}
		v = recordV2{
			Format: r.Format, Vault: r.Vault, Seq: r.Seq, Prev: r.Prev, Op: r.Op, Device: r.Device,
			Role: r.Role, Relay: r.Relay, Epoch: r.Epoch, Upto: r.Upto, Keys: r.Keys, Time: r.Time,
			Name: r.Name, Flags: r.Flags, VaultKey: r.VaultKey, VaultSig: r.VaultSig, Signer: r.Signer, Sig: r.Sig,
		}
	}
	b, err := encMode.Marshal(v)
	if err != nil {
		panic("member: invariant: encoding a record cannot fail: " + err.Error())
	}
	return b
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

var errNotArray = errors.New("not a CBOR array")

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
	return append([]byte(sigDomain), r.marshal()...)
}

// SignatureValid reports whether Sig is Signer's signature of the record.
// It checks nothing else (State.Apply does).
func (r Record) SignatureValid() bool { return r.Signer.Verify(r.signingBytes(), r.Sig) }

// Sign fills Signer and Sig.
func (r *Record) Sign(id *keys.Identity) {
	r.Signer = id.ID()
	r.Sig = id.Sign(r.signingBytes())
}

// Encode returns the canonical bytes of a signed record.
func (r Record) Encode() []byte { return r.marshal() }

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
	major, n, _, ok := cborHead(b)
	if !ok || major != 4 {
		return r, fmt.Errorf("decoding membership record: %w", errNotArray)
	}
	switch n {
	case fieldsV1:
		var v recordV1
		if err := decMode.Unmarshal(b, &v); err != nil {
			return r, fmt.Errorf("decoding membership record: %w", err)
		}
		r = Record{
			Format: v.Format, Vault: v.Vault, Seq: v.Seq, Prev: v.Prev, Op: v.Op, Device: v.Device,
			Role: v.Role, Relay: v.Relay, Epoch: v.Epoch, Upto: v.Upto, Keys: v.Keys, Time: v.Time,
			VaultKey: v.VaultKey, VaultSig: v.VaultSig, Signer: v.Signer, Sig: v.Sig,
		}
		if r.Format != Format {
			return r, fmt.Errorf("%w: %d in a format-1 array", ErrUnknownFormat, r.Format)
		}
	case fieldsV2:
		var v recordV2
		if err := decMode.Unmarshal(b, &v); err != nil {
			return r, fmt.Errorf("decoding membership record: %w", err)
		}
		r = Record{
			Format: v.Format, Vault: v.Vault, Seq: v.Seq, Prev: v.Prev, Op: v.Op, Device: v.Device,
			Role: v.Role, Relay: v.Relay, Epoch: v.Epoch, Upto: v.Upto, Keys: v.Keys, Time: v.Time,
			Name: v.Name, Flags: v.Flags, VaultKey: v.VaultKey, VaultSig: v.VaultSig, Signer: v.Signer, Sig: v.Sig,
		}
		if r.Format != Format2 {
			return r, fmt.Errorf("%w: %d in a format-2 array", ErrUnknownFormat, r.Format)
		}
	case fieldsV3:
		if err := decMode.Unmarshal(b, &r); err != nil {
			return r, fmt.Errorf("decoding membership record: %w", err)
		}
		if r.Format != Format3 {
			return r, fmt.Errorf("%w: %d in a format-3 array", ErrUnknownFormat, r.Format)
		}
	default:
		return r, fmt.Errorf("%w: an array of %d fields", ErrUnknownFormat, n)
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
	if r.Op == OpGenesis || r.Op == OpRecover {
		if err := r.checkVaultProof(); err != nil {
			return r, err
		}
	}
	return r, nil
}
