package main

import (
	"strings"
	"testing"
	"time"
)

// A note with a 250-byte name edited on both devices while apart: the
// conflict copy's name is shortened to fit 255 bytes, and both devices
// converge on the note and its copy (before, the copy could not be written
// and both stayed syncing for good, with a warning every 2 s).
func TestLongNameConflictConverges(t *testing.T) {
	a, b := pair(t)
	b.up()
	name := "notes/" + strings.Repeat("n", 247) + ".md" // a 250-byte name
	a.writeAtomic(name, []byte("# a long name\n\nfirst line\n"))
	waitSame(t, a, b, time.Minute, filesIn(1))
	b.stop()
	a.writeAtomic(name, []byte("# a long name\n\nedited on a\n"))
	a.must("scan")
	b.writeAtomic(name, []byte("# a long name\n\nedited on b\n"))
	b.up()
	got := waitSame(t, a, b, 2*time.Minute, filesIn(2))
	for p := range got {
		base := p[strings.LastIndexByte(p, '/')+1:]
		if len(base) > 255 {
			t.Errorf("%s: a name of %d bytes", p, len(base))
		}
	}
	for _, d := range []*device{a, b} {
		waitStatus(t, d, time.Minute, inSync)
	}
	if _, ok := got[name]; !ok {
		t.Fatalf("the note itself is gone: %v", got)
	}
}
