package member

import "errors"

// Errors returned when a record or invite is rejected. Each names one rule.
var (
	ErrUnknownFormat = errors.New("membership record: unknown format version")
	ErrOtherVault    = errors.New("membership record: belongs to another vault")
	ErrSequence      = errors.New("membership record: sequence gap or replay")
	ErrPrevMismatch  = errors.New("membership record: previous-hash mismatch")
	ErrBadSignature  = errors.New("membership record: bad signature")
	ErrNotAdmin      = errors.New("membership record: signer is not an admin")
	ErrBadOp         = errors.New("membership record: invalid operation")
	ErrNonCanonical  = errors.New("membership record: non-canonical encoding")
	ErrTooLarge      = errors.New("membership record: over its size limit")
	ErrRevoked       = errors.New("device is revoked")

	// ErrVaultKey means a genesis carries no vault public key, or one that
	// does not hash to the vault ID: whoever made it does not hold the
	// vault's root secret (for instance a vault-ID squatter on a relay).
	ErrVaultKey = errors.New("membership record: genesis vault key does not match the vault ID")
	// ErrVaultSignature means a genesis's vault signature does not verify
	// with its vault key: it was altered, or made for another admin.
	ErrVaultSignature = errors.New("membership record: bad genesis vault signature")

	// ErrNotRecoverable means a recovery was asked of a vault made
	// without FlagRecoverable: its devices hold the root secret, so the
	// phrase is not what only its owner has (docs/security.md, "Recovery").
	ErrNotRecoverable = errors.New("the vault was made before recovery existed: its recovery phrase cannot admit a device")
	// ErrLastAdmin means a record would leave the vault without an admin.
	ErrLastAdmin = errors.New("membership record: the vault's last admin cannot give up the role")
	// ErrBadName means a device name is empty, too long, not UTF-8 or has
	// control characters.
	ErrBadName = errors.New("device name")
	// ErrBadWords means a join's words in an add record are not
	// SASWords words of the list.
	ErrBadWords = errors.New("join words")

	// ErrRevokedEntry means an entry was signed by a revoked device after
	// the last sequence number its revocation keeps (Record.Upto).
	ErrRevokedEntry = errors.New("entry signed by a revoked device after its revocation")
	// ErrNotMember means an entry's author is not and never was a member.
	ErrNotMember = errors.New("not a member of the vault")
	// ErrMissingEpoch means an add record cannot be built because the
	// admin lacks the secret of an epoch the new device must receive.
	ErrMissingEpoch = errors.New("epoch secret not known")

	ErrInviteMalformed = errors.New("invite code is malformed")
	ErrInviteChecksum  = errors.New("invite code has a typo (checksum mismatch)")
	ErrInviteExpired   = errors.New("invite code has expired")
	ErrInviteProof     = errors.New("invite proof does not match the code")
)
