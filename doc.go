// Package weft keeps a folder identical on all of a person's or a team's
// devices, peer to peer, end-to-end encrypted.
//
// The code lives in the subpackages: protocol/ (what is signed, hashed,
// encrypted and framed, and the pure sync rules), store/ (durable state),
// node/ (a device), relay/ (the always-on node), simulation/, bench/ and
// cmd/weft. This root package holds only the repository's guardrail tests:
// layering rules, the purity of protocol/, and that every package documents
// itself.
package weft
