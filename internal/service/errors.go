package service

import "errors"

// ErrUnsupported is returned by Default on an operating system weft has no
// service manager support for.
var ErrUnsupported = errors.New("installing a service is not supported on this OS (only Linux with systemd, macOS and Windows)")
