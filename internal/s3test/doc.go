// Package s3test starts a real S3-compatible server for tests: versitygw
// (github.com/versity/versitygw) with its POSIX backend in a temporary
// directory, listening on 127.0.0.1 only (internal/s3server). The Makefile installs the
// pinned versitygw; no in-memory fake stands in for it.
package s3test
