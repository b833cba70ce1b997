// Package s3server runs a real S3-compatible server on this machine:
// versitygw (github.com/versity/versitygw) with its POSIX backend in a
// directory, on 127.0.0.1 only. Tests start it through internal/s3test and
// `weft bench --relay-chunks s3` through this package; `make tools`
// installs the pinned versitygw.
package s3server
