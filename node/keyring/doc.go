// Package keyring holds the key epochs a device knows for one vault and
// opens and seals that vault's entry bodies and chunks under the epoch
// each carries (docs/security.md, "Key epochs"). A vault starts in epoch
// 0, whose secret derives from the root secret; each revocation starts the
// next epoch with a random secret sealed to every remaining member, so a
// device learns every epoch secret it may know from the membership log
// and its own key and keeps nothing else. New entries and chunks are
// written under the newest epoch known; a revoked device never learns the
// secret of the epoch its revocation starts. The ring also remembers the
// plaintext identities of the chunks it seals and opens (node/seal's IDs).
// It knows nothing of the vault's store, folder or network.
package keyring
