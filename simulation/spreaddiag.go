package simulation

import (
	"fmt"
	"io"
)

// describeMissing writes, for each device the edit did not reach, what it
// knows: its folder state, pending work and errors, and its neighbours
// (linked, connected, and whether they have the edit).
func describeMissing(w io.Writer, c *Cluster, arrived []bool) {
	nb := map[int][]int{}
	for _, e := range c.Edges() {
		nb[e[0]] = append(nb[e[0]], e[1])
		nb[e[1]] = append(nb[e[1]], e[0])
	}
	shown := 0
	for i, ok := range arrived {
		if ok {
			continue
		}
		if shown++; shown > 40 {
			fmt.Fprintf(w, "... and more\n")
			return
		}
		d := c.Device(i)
		n := d.Node()
		if n == nil {
			fmt.Fprintf(w, "d%d: not running\n", i)
			continue
		}
		st := n.Status()
		for _, f := range st.Folders {
			fmt.Fprintf(w, "d%d: state %s pending %d apply %d fetch %d errors %v\n", i, f.State, f.Pending, f.PendingApply, f.PendingFetch, f.Errors)
		}
		for _, j := range nb[i] {
			o := c.Device(j)
			fmt.Fprintf(w, "   nb d%d connected %v has-edit %v\n", j, c.Net.Connected(d.Peer, o.Peer), arrived[j])
		}
	}
}
