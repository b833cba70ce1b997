package simulation

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/store/vaultdb"
)

// Batch setup: a large cluster (S2, S5) is built without running the
// pairing protocol once per device. Pairing is what `weft join` does, and
// S1/S3/S4 exercise it; for hundreds of devices it cost about half a
// second each plus one fsync per membership record per device (n^2
// fsyncs: 200 devices took 108 s). Here the admin signs every device's
// add record in one batch, with the same member.State.AddOp and
// member.State.Next that its pairing handler (node admit) uses, so the
// records are byte for byte what pairing would have produced, and every
// device's home gets the vault (home.AddVault, as enrol.JoinVault does)
// and the records through vaultdb.AppendMember, the path JoinVault and a
// running node's ingestMember take. The only difference: during setup
// the membership log is written without fsync (setupFS), since a crash of
// the simulation host is not what S2 or S5 measure. The nodes then run
// unchanged (node.New and Run, as `weft up` does) and reopen every
// database through the normal, fully checked open path.

// setupFS is vaultdb's OS file system with Sync a no-op.
type setupFS struct{ vaultdb.OSFS }

func (setupFS) OpenFile(name string, flag int, perm os.FileMode) (vaultdb.File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

type noSyncFile struct{ *os.File }

func (noSyncFile) Sync() error { return nil }

// AddDevicesBatch adds n devices (not started) to c, admitted by the
// admin (device 0, which must be stopped: its database is opened here) in
// one batch of signed add records, and records the whole membership in
// every device's home. now stamps the records.
func (c *Cluster) AddDevicesBatch(n int, now time.Time) error {
	admin := c.Device(0)
	if admin.Running() {
		return fmt.Errorf("simulation: batch setup needs the admin stopped")
	}
	first := c.Len()
	for range n {
		if _, err := c.newDevice(false); err != nil {
			return err
		}
	}
	id, err := admin.home.Identity()
	if err != nil {
		return err
	}
	db, _, err := vaultdb.OpenConfig(vaultdb.Config{Dir: admin.hv.DBDir(), Vault: c.Vault, FS: setupFS{}})
	if err != nil {
		return fmt.Errorf("opening the admin's vault database: %w", err)
	}
	st := db.MemberState()
	for i := first; i < first+n; i++ {
		// The epoch secrets after epoch 0 (none in a fresh vault) would
		// be sealed to the device here, as node's addOpLocked does.
		op, err := st.AddOp(rand.Reader, c.Device(i).ID, member.RoleMember, nil)
		if err != nil {
			db.Close()
			return fmt.Errorf("admitting device %d: %w", i, err)
		}
		r := st.Next(id, op, now.UnixMilli())
		if err := st.Apply(r); err != nil {
			db.Close()
			return fmt.Errorf("admitting device %d: %w", i, err)
		}
		if err := db.AppendMember(r); err != nil {
			db.Close()
			return fmt.Errorf("recording device %d in the admin's log: %w", i, err)
		}
	}
	records := db.MemberRecords()
	if err := db.Close(); err != nil {
		return err
	}
	return c.recordAllBatch(records)
}

// recordAllBatch writes the vault and records into the home of every
// device but the admin, in parallel (each device's home is its own).
func (c *Cluster) recordAllBatch(records []member.Record) error {
	c.mu.Lock()
	devs := append([]*Device(nil), c.Devices[1:]...)
	c.mu.Unlock()
	// Each device costs a few fsyncs (its root key, its database's
	// creation) and a signature check per record: more workers than cores
	// keep the disk busy while others verify.
	return eachParallel(devs, func(d *Device) error { return c.recordBatch(d, records) })
}

// recordBatch is record (cluster.go) through setupFS.
func (c *Cluster) recordBatch(d *Device, records []member.Record) error {
	hv := d.hv
	if hv.ID == (keys.VaultID{}) {
		var err error
		if hv, err = d.home.AddVault(c.Root.Secrets(), d.Folder); err != nil {
			return err
		}
	}
	db, _, err := vaultdb.OpenConfig(vaultdb.Config{Dir: hv.DBDir(), Vault: c.Vault, FS: setupFS{}})
	if err != nil {
		return err
	}
	have := len(db.MemberRecords())
	for _, r := range records[have:] {
		if err := db.AppendMember(r); err != nil {
			db.Close()
			return fmt.Errorf("recording membership of device %d: %w", d.Index, err)
		}
	}
	d.hv = hv
	return db.Close()
}

// buildBatchCluster is buildCluster (run.go) with batch setup: devices
// all public, membership signed in one batch, topology from cfg, every
// node started and every edge dialled.
func buildBatchCluster(ctx context.Context, cfg Config, total int) (*Cluster, error) {
	t0 := time.Now()
	// Rescans every 10 minutes, `weft up`'s default: in S2 and S5 only
	// device 0 changes its folder, and Spread scans it explicitly; a 2 s
	// rescan on each of 1,000 idle nodes would be most of the CPU spent.
	c, err := NewCluster(ClusterConfig{Dir: cfg.Dir, Link: cfg.Link, RescanEvery: 10 * time.Minute})
	if err != nil {
		return nil, err
	}
	if err := c.AddDevicesBatch(total-1, time.Now()); err != nil {
		c.Close()
		return nil, err
	}
	t1 := time.Now()
	if err := linkTopology(c, cfg, total); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.startAll(total); err != nil {
		c.Close()
		return nil, err
	}
	t2 := time.Now()
	edges := c.ConnectEdges(ctx)
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "setup: homes and membership %.1fs, nodes started %.1fs, %d edges connected %.1fs\n",
			t1.Sub(t0).Seconds(), t2.Sub(t1).Seconds(), edges, time.Since(t2).Seconds())
	}
	return c, nil
}

// startAll starts devices 0 to total-1, several at once: opening a vault
// database checks every membership record's signature and waits on the
// disk, and the devices are independent.
func (c *Cluster) startAll(total int) error {
	idx := make([]int, total)
	for i := range idx {
		idx[i] = i
	}
	return eachParallel(idx, func(i int) error { return c.Start(c.Device(i)) })
}

// eachParallel runs fn on every item with 4 workers per core (setup work
// that waits on the disk as much as on the CPU) and returns the first
// error, after all have run.
func eachParallel[T any](items []T, fn func(T) error) error {
	work := make(chan T)
	errs := make(chan error, len(items))
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for it := range work {
				errs <- fn(it)
			}
		})
	}
	for _, it := range items {
		work <- it
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
