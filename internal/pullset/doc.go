// Package pullset keeps one log puller running per peer and vault: a
// connection that opens while one runs wakes it instead of starting a
// second, a wake that comes as it gives up makes it try again, and a
// puller waits out a doubling backoff between attempts unless woken. The
// owner's goroutines run the pullers (spawn); this package holds only
// which keys have one.
package pullset
