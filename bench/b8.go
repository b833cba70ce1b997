package bench

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// mixedVault is B8's content at one scale: text notes, images (random
// bytes: JPEGs do not compress) and archives (half random blocks, half
// text blocks, as a zip of mixed content roughly is).
type mixedVault struct {
	notes       int   // of 2 KiB
	images      int   // of imageSize
	imageSize   int64 //
	archives    int   // of archiveSize
	archiveSize int64 //
}

func (v mixedVault) bytes() int64 {
	return int64(v.notes)*(2<<10) + int64(v.images)*v.imageSize + int64(v.archives)*v.archiveSize
}

// scaled is v with every count multiplied by f (at least one of each
// kind that v has), for a vault that does not fit at full size.
func (v mixedVault) scaled(f float64) mixedVault {
	if f >= 1 {
		return v
	}
	n := func(c int) int {
		if c == 0 {
			return 0
		}
		return max(1, int(float64(c)*f))
	}
	v.notes, v.images, v.archives = n(v.notes), n(v.images), n(v.archives)
	return v
}

func (v mixedVault) String() string {
	return fmt.Sprintf("%d notes of 2 KiB, %d images of %d MiB, %d archives of %d MiB: %d MiB",
		v.notes, v.images, v.imageSize>>20, v.archives, v.archiveSize>>20, v.bytes()>>20)
}

// write writes the vault under root and returns its file count.
func (v mixedVault) write(root string, seed uint64) (int, error) {
	if err := makeNotes(v.notes, 2<<10, 20, seed).write(filepath.Join(root, "notes")); err != nil {
		return 0, err
	}
	for i := range v.images {
		if err := writeRandomFile(filepath.Join(root, "images", fmt.Sprintf("img%04d.jpg", i)), v.imageSize, seed*1000+uint64(i)); err != nil {
			return 0, err
		}
	}
	for i := range v.archives {
		if err := writeArchive(filepath.Join(root, "archives", fmt.Sprintf("a%03d.zip", i)), v.archiveSize, seed*2000+uint64(i)); err != nil {
			return 0, err
		}
	}
	return v.notes + v.images + v.archives, nil
}

// writeArchive writes size bytes alternating 64 KiB of random bytes with
// 64 KiB of text.
func writeArchive(path string, size int64, seed uint64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	r := rng(seed)
	text := makeNotes(1, 64<<10, 1, seed)["folder00/note00000.md"]
	buf := make([]byte, 64<<10)
	for off := int64(0); off < size && err == nil; off += int64(len(buf)) {
		b := buf[:min(int64(len(buf)), size-off)]
		if (off/int64(len(buf)))%2 == 0 {
			_, _ = io.ReadFull(r, b)
		} else {
			copy(b, text)
			b[0] = byte(off >> 16) // no two text blocks alike
		}
		_, err = f.Write(b)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// runB8: a mixed vault on the relay; bytes on the relay's disk over bytes
// of plaintext, once A's unsafe is 0.
func runB8(rc *runCtx) error {
	z := sizesFor(rc.cfg.Scale)
	// A's folder, the relay's packs and slack for its logs and indexes.
	want := z.mixed.bytes()
	fits, err := rc.fit("B8 vault", want, 3, 256<<20)
	if err != nil {
		return err
	}
	v := z.mixed.scaled(float64(fits) / float64(want))
	rv, err := startRelayVault(rc, false)
	if err != nil {
		return err
	}
	defer rv.kill()
	r, a := rv.r, rv.a
	files, err := v.write(a.folder, uint64(rc.run)+800)
	if err != nil {
		return err
	}
	if _, err := upload(rc.ctx, a, files, z.syncTimeout); err != nil {
		return err
	}
	m, err := r.scrape(rc.ctx)
	if err != nil {
		return err
	}
	if err := a.stop(); err != nil {
		return err
	}
	if err := r.stop(); err != nil {
		return err
	}
	home := dirSize(r.home)
	plain := float64(v.bytes())
	packs := m[mOnDisk] // with chunks in S3: the objects' bytes, none on the relay's disk
	if rc.cfg.s3 != nil {
		packs = 0
	}
	rc.add("relay home / plaintext", "x", float64(home)/plain)
	rc.add("relay home beyond plaintext", "%", 100*(float64(home)-plain)/plain)
	rc.add("pack bytes on disk / plaintext", "x", m[mOnDisk]/plain)
	rc.add("chunk bytes stored / plaintext", "x", m[mStored]/plain)
	rc.add("relay home beyond packs", "MiB", (float64(home)-packs)/(1<<20))
	rc.add("plaintext", "MiB", plain/(1<<20))
	rc.add("files", "count", float64(files))
	if s := rc.cfg.s3; s != nil {
		rc.add("bucket bytes / plaintext", "x", float64(s.bytes(rc))/plain)
		rc.addObjReqs("upload", rv.m0, m, plain/(1<<30), "GiB")
		rc.note("with chunks in S3 the relay home holds its chunk index, logs and keys; pack bytes on disk is the objects' bytes (the same metric), the bucket bytes their files in versitygw's POSIX backend")
	}
	rc.note("relay home = the sum of regular files under the relay's home after it stopped (SIGTERM); pack and stored bytes from its /metrics just before")
	rc.note("images are random bytes; archives alternate 64 KiB random and 64 KiB text blocks; notes are B1-style text")
	return nil
}
