// Package keyfile saves and loads secret files: a device's identity key,
// a vault's secrets as a member device holds them, and (in vaults made
// before recovery existed) a vault's root secret.
//
// Every file is written whole or not at all (a temporary file in the same
// directory, created 0600, written, fsynced, renamed over the old one, then
// the directory fsynced), with permissions 0600 in a directory created 0700
// if missing. Load refuses a file that group or others may access, telling
// the user to chmod 600 it, as ssh does; both refuse a symlink in the file's
// place, so a secret is never written through, or read from, a link someone
// else planted. Permission bits are not checked on Windows, where Go does
// not report them.
//
// The typed helpers store keys in a small versioned text format:
//
//	weft-device-key v1
//	seed <64 hex digits: the ed25519 seed>
//	id <the device's peer ID, 12D3KooW...>
//
//	weft-root-secret v1
//	secret <64 hex digits>
//	vault <64 hex digits: the vault ID derived from the secret>
//
//	weft-vault-secrets v1
//	vault <64 hex digits: the vault ID>
//	rendezvous <64 hex digits>
//	epoch0 <64 hex digits>
//	check <16 hex digits: SHA-256 of the kind and the three values>
//
// Each line ends in "\n" ("\r\n" is accepted on load). The last line holds
// a value derived from the secret, so a damaged secret is caught on load
// instead of silently becoming another key, and a person looking at the
// file can tell which device or vault it belongs to without decoding it.
package keyfile
