package keys

import "errors"

// Errors of sealing epoch secrets to devices (x25519.go, seal.go).
var (
	// ErrNotOnCurve means a device ID is not the encoding of an ed25519
	// curve point that has an X25519 form, so nothing can be sealed to it.
	ErrNotOnCurve = errors.New("device key is not a usable curve point")
	// ErrSealedSecret means a sealed epoch secret does not open with this
	// device's key for the vault and epoch given: it was sealed to another
	// device, for another vault or epoch, or altered.
	ErrSealedSecret = errors.New("sealed epoch secret does not open")
)
