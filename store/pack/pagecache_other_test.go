//go:build !linux

package pack

import "errors"

func dropPageCache(string) error { return errors.New("dropping the page cache needs Linux") }
