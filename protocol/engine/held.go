package engine

// Policy says what kind of node runs the engine's rules: a device writes a
// folder; a relay writes no folder and keeps every chunk of every version
// it stores. Where the two differ, the rule is a method of Policy, so a
// device and a relay run one rule with their own policy instead of two
// copies of it drifting apart.
type Policy uint8

const (
	// DevicePolicy is a device's: its folder is where content lives.
	DevicePolicy Policy = iota
	// RelayPolicy is a relay's: its chunk store is where content lives.
	RelayPolicy
)

// String names the policy in logs and test failures.
func (p Policy) String() string {
	switch p {
	case DevicePolicy:
		return "device"
	case RelayPolicy:
		return "relay"
	}
	return "unknown policy"
}

// Holding is what a node can tell about where one version's content is.
// The facts are asked lazily, cheapest first, because some cost a lookup
// the rule may not need (a relay's Stored walks a version's chunk list and
// its pieces).
type Holding interface {
	// Inline: the entry itself carries the content (an empty file, a
	// small file's bytes, a directory, a symlink or a deletion): nothing
	// to fetch.
	Inline() bool
	// Superseded: a version this node has folded or stored supersedes
	// this one, so its content is no longer needed here to serve the
	// path's current state.
	Superseded() bool
	// Applied: the folder holds this version's content at its path. Only
	// a device has a folder.
	Applied() bool
	// Stored: every chunk of the version (and every piece listing them)
	// is in the node's chunk store. Only a relay keeps chunks for this.
	Stored() bool
}

// Held reports whether a node of policy p holds one version's content:
// what it may report in LogStatus as safe here, so that a peer counts the
// version's entry as held by this node only once the content would
// survive the peer's loss. A version is held when nothing is to be fetched
// for it (inline), when a version this node has supersedes it, or when its
// content is where this kind of node keeps content: a device's folder, a
// relay's chunk store.
//
// An entry is held when every version in it is; a node reports per author
// the longest prefix of held entries (node.heldVector, relay's
// replica.advanceLocked), and what it reports never goes back
// (node/rollback.go checks a peer's).
func (p Policy) Held(h Holding) bool {
	if h.Inline() {
		return true
	}
	// The same rule for both; the order is each policy's cheapest first
	// (a device's Applied is one index lookup, its Superseded builds the
	// path's heads; a relay's Superseded is one lookup, its Stored walks
	// the chunk list).
	if p == RelayPolicy {
		return h.Superseded() || h.Stored()
	}
	return h.Applied() || h.Superseded()
}
