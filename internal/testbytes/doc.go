// Package testbytes makes file contents for tests: seeded random bytes
// (incompressible) and lines of text (compressible), the same for every
// package that needs them.
package testbytes
