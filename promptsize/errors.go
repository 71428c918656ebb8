package promptsize

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBelowOverhead is the condition of a target smaller than the tokens the
// request costs with empty content: the chat template's own tokens, the
// system message and, for a salted build, the salt. No content can make such
// a request shorter. Errors returned for it are *OverheadError values that
// wrap ErrBelowOverhead, so callers test with errors.Is and read the numbers
// with errors.As.
var ErrBelowOverhead = errors.New("promptsize: target is below the chat template's overhead")

// ErrUnreachable is the condition of a target that no content the Builder
// tried counts to exactly: every fill overshot it because of tokenizer merges
// at the boundary, and every repair overshot it too. Errors returned for it
// are *UnreachableError values that wrap ErrUnreachable.
var ErrUnreachable = errors.New("promptsize: no content reaches the target token count")

// An OverheadError reports a target below the overhead of the request.
type OverheadError struct {
	// Target is the token count asked for.
	Target int
	// Overhead is the count of the request with empty content.
	Overhead int
	// Salt is the salt of the build, "" for none. When it is set, Overhead
	// includes the salt's tokens and Template holds the count without it.
	Salt string
	// Template is the count of the request with empty content and no salt.
	Template int
}

func (e *OverheadError) Error() string {
	if e.Salt == "" {
		return fmt.Sprintf("pp=%d is below the chat template's overhead of %d tokens", e.Target, e.Overhead)
	}
	return fmt.Sprintf("pp=%d is below the overhead of %d tokens (chat template %d, salt %q %d)",
		e.Target, e.Overhead, e.Template, e.Salt, e.Overhead-e.Template)
}

// Unwrap returns ErrBelowOverhead.
func (e *OverheadError) Unwrap() error { return ErrBelowOverhead }

// An UnreachableError reports a target that no tried content counted to.
type UnreachableError struct {
	// Target is the token count asked for.
	Target int
	// Tried says, one line per fill, what was tried and the nearest counts
	// below and above the target that it gave.
	Tried []string
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("pp=%d could not be reached exactly; tried: %s", e.Target, strings.Join(e.Tried, "; "))
}

// Unwrap returns ErrUnreachable.
func (e *UnreachableError) Unwrap() error { return ErrUnreachable }
