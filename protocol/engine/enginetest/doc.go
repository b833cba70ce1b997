// Package enginetest holds deliberately broken sync rules, for tests that
// show a convergence check bites: a check that passes under the real rules
// must fail under these.
package enginetest
