package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/internal/attack"
)

// strangerFile is the honest sync of B11: one file of 5 MiB, as in issue
// 15's report (0.3 to 0.8 s without attack, 12.9 s under it before the
// fix).
const strangerFile = 5 << 20

// strangerAttack is how long B11's attack lasts: long enough for the
// honest sync to run inside it with room to spare.
const strangerAttack = 20 * time.Second

// runB11: the stranger attack of issue 15 (internal/attack: 4 fresh
// identities, 32 streams each at once on the log, chunk and pair
// protocols, each opening with an 8 MiB frame) against A, while B, a
// paired device, syncs a 5 MiB file from A. The same sync without attack,
// in the same run just before, is the reference: the ratio is the cost of
// the attack to an honest user. A's RSS is sampled every 50 ms from the
// attack's start to 2 s after its end.
func runB11(rc *runCtx) error {
	a, b, err := pair(rc)
	if err != nil {
		return err
	}
	defer a.kill()
	defer b.kill()
	if err := connected(rc, a, b, 0); err != nil {
		return err
	}
	seed := uint64(rc.run)*10 + 11
	// A warm-up sync (not timed): the first transfer also pays for
	// connection set-up and the agent's first allocations.
	sync1 := func(name string) (time.Duration, error) {
		stage := filepath.Join(rc.dir, "stage", name)
		if err := os.MkdirAll(filepath.Dir(stage), 0o755); err != nil {
			return 0, err
		}
		seed++
		if err := writeRandomFile(stage, strangerFile, seed); err != nil {
			return 0, err
		}
		start := time.Now()
		if err := os.Rename(stage, filepath.Join(a.folder, name)); err != nil {
			return 0, err
		}
		done, err := waitSizes(rc.ctx, b.folder, []string{name}, strangerFile, 2*time.Minute)
		if err != nil {
			return 0, fmt.Errorf("%w\n%s", err, b.logTail())
		}
		ok, err := sameFile(filepath.Join(a.folder, name), filepath.Join(b.folder, name))
		if err != nil || !ok {
			return 0, fmt.Errorf("%s differs on B (%v)", name, err)
		}
		return done.Sub(start), nil
	}
	if _, err := sync1("warm.bin"); err != nil {
		return err
	}
	// The reference: the median of three syncs without attack.
	var quiets []time.Duration
	for i := range 3 {
		q, err := sync1(fmt.Sprintf("quiet%d.bin", i))
		if err != nil {
			return err
		}
		quiets = append(quiets, q)
	}
	slices.Sort(quiets)
	quiet := quiets[1]
	st, err := a.status(rc.ctx)
	if err != nil {
		return err
	}
	target, err := attack.Target(st.Device, st.Addrs)
	if err != nil {
		return err
	}
	rc.add("sync without attack (median of 3)", "s", quiet.Seconds())
	for _, ph := range []struct {
		label  string
		rotate bool
	}{
		{"4 identities", false},
		{"fresh identities", true},
	} {
		if err := strangerPhase(rc, a, target, ph.label, ph.rotate, quiet, sync1); err != nil {
			return err
		}
	}
	rc.note("attacker: 4 identities x 32 streams x 3 protocols, 8 MiB first frames, %s, in the bench process on the same machine; \"fresh identities\": each identity the agent drops is replaced by a new key at once", strangerAttack)
	if err := a.stop(); err != nil {
		return err
	}
	return b.stop()
}

// strangerPhase runs one attack on a (fresh identities replacing dropped
// ones when rotate is set) and times the honest sync under it; metrics are
// named with label.
func strangerPhase(rc *runCtx, a *device, target peer.AddrInfo, label string, rotate bool, quiet time.Duration, sync1 func(string) (time.Duration, error)) error {
	u0, err := a.usage()
	if err != nil {
		return err
	}
	var mu sync.Mutex
	peak := u0.RSS
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
				if u, err := a.usage(); err == nil {
					mu.Lock()
					peak = max(peak, u.RSS)
					mu.Unlock()
				}
			}
		}
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			close(stopSampling)
			<-sampled
		}
	}
	defer stop()
	atk, err := attack.Start(rc.ctx, attack.Config{Target: target, Duration: strangerAttack, Rotate: rotate})
	if err != nil {
		return err
	}
	// The honest sync starts once the attack is under way.
	deadline := time.Now().Add(strangerAttack / 2)
	for atk.Streams() < 50 {
		if time.Now().After(deadline) {
			atk.Stop()
			return fmt.Errorf("%s: the attack opened %d streams in %s", label, atk.Streams(), strangerAttack/2)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ua0, err := a.usage()
	if err != nil {
		atk.Stop()
		return err
	}
	attacked, err := sync1(strings.ReplaceAll(label, " ", "-") + ".bin")
	if err != nil {
		atk.Stop()
		return err
	}
	ua1, err := a.usage()
	if err != nil {
		atk.Stop()
		return err
	}
	res := atk.Wait()
	// Memory given back: what A holds 2 s after the attack ended.
	ended := time.Now()
	for time.Since(ended) < 2*time.Second {
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	u2, err := a.usage()
	if err != nil {
		return err
	}
	rc.add(label+": sync under attack", "s", attacked.Seconds())
	rc.add(label+": under attack / without", "x", attacked.Seconds()/quiet.Seconds())
	rc.add(label+": RSS A before", "MiB", float64(u0.RSS)/(1<<20))
	rc.add(label+": peak RSS A - before", "MiB", float64(peak-u0.RSS)/(1<<20))
	rc.add(label+": RSS A 2 s after - before", "MiB", float64(u2.RSS-u0.RSS)/(1<<20))
	rc.add(label+": CPU A during the sync", "s", ua1.CPUSeconds-ua0.CPUSeconds)
	rc.add(label+": streams opened", "count", float64(res.Streams))
	rc.add(label+": MiB sent", "MiB", float64(res.Bytes)/(1<<20))
	rc.add(label+": identities", "count", float64(4+res.Fresh))
	return nil
}
