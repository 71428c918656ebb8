package httpsafe

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// MaxRetryAfter is the longest a control-plane client waits before a retry,
// whatever a server's Retry-After asks for.
const MaxRetryAfter = 30 * time.Second

// ParseRetryAfter reads a Retry-After header value: a whole number of
// seconds, or an HTTP date (a date in the past is no wait). ok is false
// for an empty, negative or unreadable value. A number of seconds too
// large for a time.Duration gives the largest one; callers cap it.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
				return math.MaxInt64, true
			}
			return 0, false
		}
		if n > uint64(math.MaxInt64/int64(time.Second)) {
			return math.MaxInt64, true
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// RetryAfter returns the wait resp asks for in its Retry-After header, when
// it is a 429 or a 503 with a readable one, capped at limit (MaxRetryAfter
// when limit ≤ 0).
func RetryAfter(resp *http.Response, limit time.Duration, now time.Time) (time.Duration, bool) {
	if resp == nil || resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), now)
	if !ok {
		return 0, false
	}
	if limit <= 0 {
		limit = MaxRetryAfter
	}
	return min(d, limit), true
}

// Backoff returns a retryablehttp.Backoff: a 429's or 503's Retry-After,
// capped at limit (MaxRetryAfter when limit ≤ 0); otherwise min × 2^attempt,
// at most max.
func Backoff(limit time.Duration) retryablehttp.Backoff {
	return func(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
		if d, ok := RetryAfter(resp, limit, time.Now()); ok {
			return d
		}
		mult := math.Pow(2, float64(attempt)) * float64(lo)
		if mult >= float64(hi) || math.IsInf(mult, 0) || math.IsNaN(mult) {
			return hi
		}
		return time.Duration(mult)
	}
}

// RetryAfterExceedsDeadline reports whether resp asks, with its Retry-After
// (capped as RetryAfter caps it), for a wait that would end after ctx's
// deadline. A retry policy then gives up at once, with the server's answer,
// instead of sleeping into the deadline: the wait counts against the
// call's time.
func RetryAfterExceedsDeadline(ctx context.Context, resp *http.Response, limit time.Duration) bool {
	deadline, ok := ctx.Deadline()
	if !ok {
		return false
	}
	now := time.Now()
	d, ok := RetryAfter(resp, limit, now)
	return ok && now.Add(d).After(deadline)
}
