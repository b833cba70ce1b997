package node

import "github.com/weftsync/weft/node/api"

// Subscribe returns a channel of the node's events and a function that
// ends the subscription. A subscriber that does not keep up loses events.
func (n *Node) Subscribe() (<-chan api.Event, func()) { return n.events.Subscribe() }
