// Package testhook holds switches that only tests flip. Each one breaks a
// rule of the sync core on purpose, so that a test can show that the
// checks meant to catch such a bug actually do (a check that never fails
// proves nothing). Production code never sets them; they live in an
// internal package so that no program outside this module can either.
package testhook
