package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// b6edit is one edit of B6: data written at off, overwriting or inserted.
type b6edit struct {
	name   string
	size   int
	insert bool
}

// runB6: a large file in sync; then 1 MiB overwritten at an unaligned
// offset in the middle; then 1 MiB inserted there; then 1,000,000 bytes
// inserted. Each edit: bytes on the wire, time until B has it, CPU.
func runB6(rc *runCtx) error {
	z := sizesFor(rc.cfg.Scale)
	// A's file, B's, the staged edits and B's temporary copies.
	file, err := rc.fit("B6 file", z.editFile, 6, 256<<20)
	if err != nil {
		return err
	}
	a, b, err := pair(rc)
	if err != nil {
		return err
	}
	defer a.kill()
	defer b.kill()
	if err := connected(rc, a, b, 0); err != nil {
		return err
	}
	const rel = "big.bin"
	if err := writeRandomFile(filepath.Join(rc.dir, "stage", rel), file, uint64(rc.run)+11); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(rc.dir, "stage", rel), filepath.Join(a.folder, rel)); err != nil {
		return err
	}
	if _, err := waitSizes(rc.ctx, b.folder, []string{rel}, file, z.syncTimeout); err != nil {
		return err
	}
	// Unaligned: not a multiple of 64 KiB (nor of 4 KiB).
	off := file/2 + 12345
	r := rng(uint64(rc.run) + 12)
	size := file
	for _, ed := range []b6edit{{"overwrite 1 MiB", 1 << 20, false}, {"insert 1 MiB", 1 << 20, true}, {"insert 1,000,000 B", 1000000, true}} {
		for _, d := range []*device{a, b} {
			if _, err := d.waitState(rc.ctx, z.syncTimeout, 20*time.Millisecond, inSync(1)); err != nil {
				return err
			}
		}
		data := make([]byte, ed.size)
		_, _ = r.Read(data)
		pa := filepath.Join(a.folder, rel)
		var staged string
		if ed.insert {
			staged = filepath.Join(rc.dir, "stage", rel)
			if err := insertCopy(pa, staged, off, data); err != nil {
				return err
			}
			size += int64(ed.size)
		}
		sent0, _, err := a.wire(rc.ctx)
		if err != nil {
			return err
		}
		_, recv0, err := b.wire(rc.ctx)
		if err != nil {
			return err
		}
		ua0, _ := a.usage()
		ub0, _ := b.usage()
		t0 := time.Now()
		if ed.insert {
			err = os.Rename(staged, pa)
		} else {
			err = overwriteAt(pa, off, data)
		}
		if err != nil {
			return err
		}
		seen, err := waitRegion(rc.ctx, filepath.Join(b.folder, rel), size, off, data, z.syncTimeout)
		if err != nil {
			return fmt.Errorf("%s: %w\n%s", ed.name, err, b.logTail())
		}
		// Let the counters settle: B may still be acknowledging.
		for _, d := range []*device{a, b} {
			if _, err := d.waitState(rc.ctx, z.syncTimeout, 20*time.Millisecond, inSync(1)); err != nil {
				return err
			}
		}
		ua, _ := a.usage()
		ub, _ := b.usage()
		sent, _, err := a.wire(rc.ctx)
		if err != nil {
			return err
		}
		_, recv, err := b.wire(rc.ctx)
		if err != nil {
			return err
		}
		rc.add(ed.name+": received by B", "MiB", float64(recv-recv0)/(1<<20))
		rc.add(ed.name+": sent by A", "MiB", float64(sent-sent0)/(1<<20))
		rc.add(ed.name+": time until B has it", "s", seen.Sub(t0).Seconds())
		rc.add(ed.name+": CPU A", "s", ua.CPUSeconds-ua0.CPUSeconds)
		rc.add(ed.name+": CPU B", "s", ub.CPUSeconds-ub0.CPUSeconds)
		ok, err := sameFile(pa, filepath.Join(b.folder, rel))
		if err != nil || !ok {
			return fmt.Errorf("%s: B's file differs from A's (%v)", ed.name, err)
		}
	}
	rc.note("the overwrite is done in place (WriteAt); insertions write a new file and rename it over the old one")
	if err := a.stop(); err != nil {
		return err
	}
	return b.stop()
}

func overwriteAt(path string, off int64, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, off)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// insertCopy writes src with data inserted at off to dst.
func insertCopy(src, dst string, off int64, data []byte) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(out, in, off); err != nil {
		out.Close()
		return err
	}
	if _, err := out.Write(data); err != nil {
		out.Close()
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// waitRegion polls path until it is size bytes long and holds data at off.
func waitRegion(ctx context.Context, path string, size, off int64, data []byte, limit time.Duration) (time.Time, error) {
	deadline := time.Now().Add(limit)
	buf := make([]byte, len(data))
	for time.Now().Before(deadline) {
		if fi, err := os.Stat(path); err == nil && fi.Size() == size {
			seen := time.Now()
			if f, err := os.Open(path); err == nil {
				_, err := f.ReadAt(buf, off)
				f.Close()
				if err == nil && bytes.Equal(buf, data) {
					return seen, nil
				}
			}
		}
		if ctx.Err() != nil {
			return time.Time{}, ctx.Err()
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("%s did not get the edit within %s", path, limit)
}
