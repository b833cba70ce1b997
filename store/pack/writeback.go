package pack

// packWriter appends to a pack at explicit offsets (the store never relies
// on a file position, see File) and asks the kernel to start writing each
// large piece back to the disk as soon as it is written.
//
// Why the hint: a group commit copies up to maxBatchBytes into the page
// cache and then fsyncs. Without the hint the disk idles while the loop
// copies, and the copy idles while the disk writes; with it the disk is
// already writing the first chunks of a batch while the loop copies the
// next ones, and the fsync finds little left to do. The hint changes no
// durability rule: nothing is acknowledged or indexed before the fsync, as
// before. See docs/storage.md ("Measured").
type packWriter struct {
	f   File
	off int64
}

// writebackMin is the smallest write that is hinted: small records are
// buffered into writes of up to 1 MiB, and a hint for a few KiB just
// before the batch's fsync would only cost a system call.
const writebackMin = 512 << 10

func (w *packWriter) Write(p []byte) (int, error) {
	n, err := w.f.WriteAt(p, w.off)
	if err == nil && n >= writebackMin {
		startWriteback(w.f, w.off, int64(n))
	}
	w.off += int64(n)
	return n, err
}
