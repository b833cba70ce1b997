// Package peerbook remembers where a vault's members were last reachable:
// the addresses the agent dials after a restart, that the doctor shows and
// that peer exchange tells other members. It keeps the list in a vault's
// metadata (a Store) and in memory, and knows nothing of hosts or
// connections.
package peerbook
