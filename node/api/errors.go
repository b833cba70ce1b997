package api

import (
	"errors"
	"net/http"
)

// Classes of failure that the API answers with a status of their own. An
// error of the agent belongs to a class when errors.Is matches it with the
// class; Classified makes such an error. Anything unclassified gets the
// status the call chooses for it (most calls: 500).
var (
	ErrNotFound    = errors.New("not found")       // 404: no such folder, path, version, device
	ErrInvalid     = errors.New("invalid request") // 400: the request itself is wrong
	ErrForbidden   = errors.New("forbidden")       // 403: this device may not do that
	ErrConflict    = errors.New("conflict")        // 409: not in the folder's present state
	ErrUnavailable = errors.New("unavailable")     // 503: needs what no connected device has
)

// classified is an error with a message of its own that belongs to a class.
type classified struct {
	class error
	msg   string
}

func (e *classified) Error() string { return e.msg }

// Is makes errors.Is(e, class) true.
func (e *classified) Is(target error) bool { return target == e.class }

// Classified returns a new error whose message is msg and which errors.Is
// matches with class (one of the Err classes above) as well as with itself,
// so that it serves as a sentinel of the package that declares it.
func Classified(class error, msg string) error { return &classified{class: class, msg: msg} }

// statusOf is the HTTP status of err: its class's, or otherwise.
func statusOf(err error, otherwise int) int {
	switch {
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return otherwise
}
