// Package connect is how a device reaches its peers: the libp2p host it
// listens and dials with (NewHost: transports, resource limits for
// members and strangers, sticky listen ports, hole punching, AutoNAT),
// circuit v2 reservations on relays and dials of members through them
// (Reservations), meeting members through weft's own DHT (Rendezvous), the
// kind of each connection as status reports it (Kind, PunchTracer), and the
// dials to remembered addresses, each device on its own backoff
// (DialLoop, Redial).
//
// It knows vaults only through the narrow views the shell (package node)
// hands it: who the members and relays are, a vault's rendezvous key, where
// to remember a member's addresses. It holds no vault state and imports
// neither node nor the store (TestLayering), so the shell decides what to
// sync and this package only gets it a connection. docs/connectivity.md
// describes the behaviour.
package connect
