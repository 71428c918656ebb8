package engine

import "fmt"

// CountMargin is how far a server-reported completion count may exceed the
// request's MaxTokens before it is implausible: max(CountMarginTokens,
// MaxTokens × CountMarginRatio). Servers count a stop token or a final
// empty step in some versions, so an exact bound would reject honest
// answers; a count past the margin is a server bug or a hostile server, and
// either way no rate may be computed from it.
const (
	CountMarginTokens = 16
	CountMarginRatio  = 0.25
)

// MaxPlausibleCount is the largest completion-token count a server may
// report for a request that asked for at most maxTokens tokens: maxTokens
// plus the margin (see CountMargin). When maxTokens is 0 (no bound asked)
// it is NoMaxTokensBound.
func MaxPlausibleCount(maxTokens int) int {
	if maxTokens <= 0 {
		return NoMaxTokensBound
	}
	m := int(float64(maxTokens) * CountMarginRatio)
	if m < CountMarginTokens {
		m = CountMarginTokens
	}
	return maxTokens + m
}

// NoMaxTokensBound bounds a reported completion count when the request set
// no MaxTokens: no served model has a context of this many tokens.
const NoMaxTokensBound = 1 << 24

// CheckCount returns an *Error of KindImplausibleUsage when a count the
// server reported (what names it, e.g. "usage.completion_tokens") is
// negative or above limit; nil otherwise. The message names both numbers.
func CheckCount(what string, n, limit int) error {
	switch {
	case n < 0:
		return &Error{Kind: KindImplausibleUsage, Op: "check server counts",
			Err: fmt.Errorf("%s = %d is negative", what, n)}
	case n > limit:
		return &Error{Kind: KindImplausibleUsage, Op: "check server counts",
			Err: fmt.Errorf("%s = %d exceeds the plausible bound %d", what, n, limit)}
	}
	return nil
}

// CheckRising returns an *Error of KindImplausibleUsage when a cumulative
// count the server reported falls: prev is the last value seen, n the new
// one.
func CheckRising(what string, prev, n int) error {
	if n < prev {
		return &Error{Kind: KindImplausibleUsage, Op: "check server counts",
			Err: fmt.Errorf("%s fell from %d to %d", what, prev, n)}
	}
	return nil
}

// MaxKeptText is the most bytes of generated text a Result keeps (in
// Result.Text). A server that streams more than any plausible answer, say
// 200 MB for 16 tokens, must not make the client hold it all: adapters
// stop appending past this bound and go on counting tokens from the
// stream, and the request is flagged by its counts, not by its memory.
const MaxKeptText = 1 << 20
