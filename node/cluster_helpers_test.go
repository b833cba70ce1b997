package node_test

import (
	"context"
	"testing"

	"github.com/weftsync/weft/simulation"
)

// meshCluster starts n simulated devices of one vault on the in-memory
// network, every pair linked and connected, and closes them at the end of
// the test.
func meshCluster(t *testing.T, n int) *simulation.Cluster {
	t.Helper()
	ctx := context.Background()
	c, err := simulation.NewCluster(simulation.ClusterConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing the cluster: %v", err)
		}
	})
	if err := c.Start(c.Device(0)); err != nil {
		t.Fatal(err)
	}
	for range n - 1 {
		if _, err := c.Join(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.RecordAll(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			if err := c.AddEdge(i, j); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Start(c.Device(i)); err != nil {
			t.Fatal(err)
		}
	}
	c.ConnectEdges(ctx)
	return c
}
