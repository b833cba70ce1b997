package node_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftsync/weft/node/api"
)

// TestResolveReachesEveryDevice: two devices edit one line of a note
// while apart and meet with a conflict copy. A person on device 0 keeps
// the copy's content; every device then holds that content at the name
// and no copy, with no new conflict. The same again with keep both: the
// copy becomes an ordinary file on every device.
func TestResolveReachesEveryDevice(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two nodes")
	}
	ctx := context.Background()
	c := meshCluster(t, 2)

	// Both notes are created on device 0 and reach device 1 as new files,
	// so device 1's edits right after are edits of them (a save landing
	// within engine.ApplyRaceWindow of an apply that replaced a file
	// would be taken as made from the content before it).
	notes := []string{"todo.txt", "plan.txt"}
	for _, p := range notes {
		write(t, c.Device(0).FS, p, []byte("one\ntwo\nthree\n"), 0)
	}
	scan(t, c, 0)
	settle(t, c, []int{0, 1})
	if err := c.Net.Cut(c.Device(0).Peer, c.Device(1).Peer); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		for _, p := range notes {
			write(t, c.Device(i).FS, p, []byte(fmt.Sprintf("one\ntwo by %d\nthree\n", i)), int64(i+1)*1e9)
		}
		scan(t, c, i)
	}
	c.Net.HealAll()
	c.ConnectEdges(ctx)
	before := settle(t, c, []int{0, 1})
	copyOf := map[string]string{}
	for p := range before {
		if strings.Contains(p, ".conflict-") {
			copyOf[p[:strings.Index(p, ".conflict-")]+".txt"] = p
		}
	}
	if len(copyOf) != 2 || copyOf["todo.txt"] == "" || copyOf["plan.txt"] == "" {
		t.Fatalf("conflict copies %v, want one of each note", copyOf)
	}

	// Device 0 keeps todo.txt's copy, naming the copy; device 1 keeps
	// both of plan.txt, naming the note.
	res, err := c.Device(0).Node().API().Resolve(ctx, api.ResolveRequest{Path: filepath.Join(c.Device(0).Folder, copyOf["todo.txt"]), Keep: "copy"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Copy != copyOf["todo.txt"] || res.Of != "todo.txt" || res.Kept != "copy" || res.Held {
		t.Errorf("keep copy: result %+v", res)
	}
	both, err := c.Device(1).Node().API().Resolve(ctx, api.ResolveRequest{Path: filepath.Join(c.Device(1).Folder, "plan.txt"), Keep: "both"})
	if err != nil {
		t.Fatal(err)
	}
	if both.Copy != copyOf["plan.txt"] || both.Renamed == "" {
		t.Errorf("keep both: result %+v", both)
	}

	tree := settle(t, c, []int{0, 1})
	if tree["todo.txt"] != before[copyOf["todo.txt"]] {
		t.Errorf("todo.txt holds %x on every device, want the copy's content %x", tree["todo.txt"], before[copyOf["todo.txt"]])
	}
	if tree["plan.txt"] != before["plan.txt"] || tree[both.Renamed] != before[copyOf["plan.txt"]] {
		t.Errorf("keep both: plan.txt %x (want %x), %s %x (want the copy's %x)", tree["plan.txt"], before["plan.txt"], both.Renamed, tree[both.Renamed], before[copyOf["plan.txt"]])
	}
	for p := range tree {
		if strings.Contains(p, ".conflict-") {
			t.Errorf("a conflict copy after resolving: %s", p)
		}
	}
	if len(tree) != 3 {
		t.Errorf("files after resolving: %v, want todo.txt, plan.txt and the kept copy", tree)
	}
}
