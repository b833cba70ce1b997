package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
)

// runB4: one large random file uploaded to the relay by A alone (no
// other device), A SIGKILLed once the relay has stored half of it, and
// restarted; then the clock runs until A's unsafe is 0. The point is how
// much A sends again of what the relay already held: the relay asks only
// for chunks it does not have, so the target is less than one chunk.
//
// Counted, in chunks of the average size (chunk.AvgSize):
//   - "A sent - stored": A's bytes_sent over both processes (the first
//     one's last sample, taken just before the kill) minus the relay's
//     stored bytes at the end: what the brief calls bytes sent again,
//     protocol messages (entries, CIDs, envelopes) included;
//   - "relay received - stored": the same overhead as the relay counted
//     it; what A sent beyond it was lost in flight at the kill;
//   - "A sent after restart - stored after restart": exact, from the
//     second process's counter and the relay's stored bytes just after the
//     kill and at the end.
func runB4(rc *runCtx) error {
	z := sizesFor(rc.cfg.Scale)
	want := z.resumeFile
	if lim := maxFileBytes(); want > lim {
		rc.reduced = append(rc.reduced, fmt.Sprintf("B4 file: %s is more chunks than one version may hold (entry.MaxFileChunks = %d at %d KiB chunks on average): ran %s", human(want), entry.MaxFileChunks, chunk.AvgSize>>10, human(lim)))
		want = lim
	}
	// A's copy and the relay's; at full scale the largest whole GiB that
	// fits when the file does not.
	size, err := rc.fit("B4 file", want, 2, b4Step(rc.cfg.Scale))
	if err != nil {
		return err
	}
	rel := "big.bin"
	staged := filepath.Join(rc.dir, "stage", rel)
	if err := writeRandomFile(staged, size, uint64(rc.run)+400); err != nil {
		return err
	}
	v, err := startRelayVault(rc, false)
	if err != nil {
		return err
	}
	defer v.kill()
	r, a := v.r, v.a
	start := time.Now()
	if err := os.Rename(staged, filepath.Join(a.folder, rel)); err != nil {
		return err
	}
	// Poll the relay's stored bytes; at half the file, sample A's
	// counter and kill it at once.
	var sent1 int64
	deadline := time.Now().Add(z.syncTimeout)
	for {
		m, err := r.scrape(rc.ctx)
		if err != nil {
			return err
		}
		if m[mStored] >= float64(size)/2 {
			if sent1, _, err = a.wire(rc.ctx); err != nil {
				return err
			}
			a.kill()
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("relay stored %.0f of %d bytes within %s\n%s", m[mStored], size, z.syncTimeout, a.logTail())
		}
		if err := rc.ctx.Err(); err != nil {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
	killedAt := time.Since(start)
	// Let the relay notice the dead connection and finish what it read.
	time.Sleep(time.Second)
	mk, err := r.scrape(rc.ctx)
	if err != nil {
		return err
	}
	if err := a.up(rc.ctx, false); err != nil {
		return err
	}
	up, err := upload(rc.ctx, a, 1, z.syncTimeout)
	if err != nil {
		return err
	}
	sent2, _, err := a.wire(rc.ctx)
	if err != nil {
		return err
	}
	mf, err := r.scrape(rc.ctx)
	if err != nil {
		return err
	}
	ur, err := r.usage()
	if err != nil {
		return err
	}
	if mf[mStored] < float64(size) {
		return fmt.Errorf("relay stores %.0f bytes of a %d-byte file after A's unsafe 0", mf[mStored], size)
	}
	c := float64(chunk.AvgSize)
	stored := mf[mStored]
	rc.add("file", "MiB", float64(size)/(1<<20))
	rc.add("stored by the relay at the kill", "%", 100*mk[mStored]/stored)
	rc.add("A sent - stored (both processes)", "chunks", (float64(sent1+sent2)-stored)/c)
	rc.add("relay received - stored", "chunks", (mf[mReceived]-stored)/c)
	rc.add("sent again beyond protocol overhead", "chunks", (float64(sent1+sent2)-mf[mReceived])/c)
	rc.add("A sent after restart - stored after restart", "chunks", (float64(sent2)-(stored-mk[mStored]))/c)
	rc.add("kill after", "s", killedAt.Seconds())
	rc.add("restart -> A unsafe 0", "s", up.safe.Seconds())
	rc.add("peak RSS relay", "MiB", float64(ur.PeakRSS)/(1<<20))
	rc.note("a chunk here is the average chunk size, %d KiB; stored = the relay's weft_relay_vault_bytes_stored (encrypted) at the end", chunk.AvgSize>>10)
	rc.note("'sent again beyond protocol overhead' = A's bytes sent (both processes) - the relay's bytes received: bytes in flight when A was killed")
	if err := a.stop(); err != nil {
		return err
	}
	return r.stop()
}

// b4Step is the unit B4's file shrinks by when it does not fit: whole GiB
// at full scale, 64 MiB below it.
func b4Step(s Scale) int64 {
	if s == Full {
		return 1 << 30
	}
	return 64 << 20
}

// maxFileBytes is the largest file B4 uses: what one version may hold
// (entry.MaxFileChunks chunks; a large file's version lists its pieces,
// so no entry or frame limit applies any more), with an eighth in hand
// since chunk sizes vary, in whole GiB.
func maxFileBytes() int64 {
	return int64(entry.MaxFileChunks) * chunk.AvgSize * 7 / 8 >> 30 << 30
}
