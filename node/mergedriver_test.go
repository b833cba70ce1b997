package node_test

import (
	"context"
	"strings"
	"testing"

	"lukechampine.com/blake3"
)

// TestMergeDriversAcrossDevices: two devices apart each change a
// different key of a settings file on adjacent lines, of a one-line JSON
// file, and of a note's frontmatter, and different nodes of a canvas; when they meet, both hold the merged
// files and no conflict copy (protocol.MergeFile).
func TestMergeDriversAcrossDevices(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two nodes")
	}
	ctx := context.Background()
	c := meshCluster(t, 2)

	files := map[string][3]string{ // base, device 0, device 1
		".obsidian/app.json": {
			"{\n  \"alwaysUpdateLinks\": false,\n  \"showLineNumber\": false\n}\n",
			"{\n  \"alwaysUpdateLinks\": true,\n  \"showLineNumber\": false\n}\n",
			"{\n  \"alwaysUpdateLinks\": false,\n  \"showLineNumber\": true\n}\n",
		},
		"data.json": {`{"a":1,"b":2}`, `{"a":3,"b":2}`, `{"a":1,"b":4}`},
		"note.md": {
			"---\nstatus: draft\nauthor: ann\n---\nbody\n",
			"---\nstatus: done\nauthor: ann\n---\nbody\n",
			"---\nstatus: draft\nauthor: bob\n---\nbody\n",
		},
		"board.canvas": {
			`{"nodes":[{"id":"n1","x":0},{"id":"n2","x":0}],"edges":[]}`,
			`{"nodes":[{"id":"n1","x":40},{"id":"n2","x":0}],"edges":[]}`,
			`{"nodes":[{"id":"n1","x":0},{"id":"n2","x":0},{"id":"n3","x":9}],"edges":[{"id":"e1","fromNode":"n2","toNode":"n3"}]}`,
		},
	}
	want := map[string]string{
		".obsidian/app.json": "{\n  \"alwaysUpdateLinks\": true,\n  \"showLineNumber\": true\n}\n",
		"data.json":          `{"a":3,"b":4}`,
		"note.md":            "---\nstatus: done\nauthor: bob\n---\nbody\n",
		"board.canvas":       `{"nodes":[{"id":"n1","x":40},{"id":"n2","x":0},{"id":"n3","x":9}],"edges":[{"id":"e1","fromNode":"n2","toNode":"n3"}]}`,
	}
	for p, v := range files {
		write(t, c.Device(0).FS, p, []byte(v[0]), 0)
	}
	scan(t, c, 0)
	settle(t, c, []int{0, 1})
	if err := c.Net.Cut(c.Device(0).Peer, c.Device(1).Peer); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		for p, v := range files {
			write(t, c.Device(i).FS, p, []byte(v[i+1]), int64(i+1)*1e9)
		}
		scan(t, c, i)
	}
	c.Net.HealAll()
	c.ConnectEdges(ctx)
	tree := settle(t, c, []int{0, 1})
	for p, w := range want {
		if tree[p] != blake3.Sum256([]byte(w)) {
			t.Errorf("%s is not the merge %q on both devices", p, w)
		}
	}
	for p := range tree {
		if strings.Contains(p, ".conflict-") {
			t.Errorf("a conflict copy: %s", p)
		}
	}
}
