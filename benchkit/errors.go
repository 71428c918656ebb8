package benchkit

import "errors"

// ErrRequestsFailed is returned by a program whose run completed but some
// of whose requests failed; their rows say why.
var ErrRequestsFailed = errors.New("some requests failed")
