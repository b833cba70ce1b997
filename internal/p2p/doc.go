// Package p2p is the libp2p plumbing that devices (node/) and relays
// (relay/) share: the mapping between weft device IDs and libp2p peer IDs,
// and the base of every weft host (transports, security, muxer, resource
// and connection managers). Each side adds its own services (hole
// punching, the relay service) on top. It lives here, not in node/,
// because relay/ must not import node/.
package p2p
