// Package scripttest runs datadriven-style test scripts: a file of
// commands, each followed by a line "----" and its expected output up to a
// blank line; comment lines (#) and blank lines pass through. A test
// supplies what a command does; the package compares the output, or, with
// update set (make rewrite), writes the file back with what the commands
// produce now. protocol's conflict-rule scripts and the deterministic
// simulation's histories share it, so both formats stay one format.
package scripttest
