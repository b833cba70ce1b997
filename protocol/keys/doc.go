// Package keys holds weft's identities and key hierarchy: a device's ed25519
// identity (which is also its libp2p identity), a vault's root secret and the
// subkeys derived from it by HKDF (among them the vault's ed25519 signing key,
// whose public key hashes to the vault ID: vaultkey.go), the 24-word recovery phrase that
// encodes the root secret, and the sealing of a key epoch's secret to one
// device through the X25519 form of its ed25519 key (x25519.go, seal.go).
//
// The package does no IO: saving a key to disk is store/keyfile's job.
package keys
