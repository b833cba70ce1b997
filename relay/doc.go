// Package relay is weft's always-on node: a libp2p circuit relay v2 with
// resource limits, a Kademlia DHT server for rendezvous, and a
// store-and-forward replica of every vault it serves.
//
// A relay holds no key of any vault. It pulls entries and chunks from the
// vault's devices over the same protocols devices use with each other
// (/weft/log/1, /weft/chunk/1) and serves them back, verifying what it can
// without keys: entry signatures and hash chains, membership records, and
// chunk CIDs (the hash of the ciphertext), and the public pieces that list
// a large file's chunks (pieces.go), which it reads to learn what to fetch.
// What it stores is what a device would send any peer: signed entries with
// encrypted bodies, encrypted chunks and pieces. docs/security.md says what
// that reveals.
//
// A vault is served once one of its members enrolls it (/weft/relay/1)
// with a membership log that lists this relay; from then on the relay
// answers only that vault's members and refuses revoked devices.
package relay
