package httpsafe

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		v  string
		d  time.Duration
		ok bool
	}{
		{"120", 120 * time.Second, true},
		{" 0 ", 0, true},
		{"100000", 100000 * time.Second, true},
		{"99999999999999999999999", math.MaxInt64, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"", 0, false},
		{"soon", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
	} {
		d, ok := ParseRetryAfter(c.v, now)
		if d != c.d || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", c.v, d, ok, c.d, c.ok)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "100000", "-1", "Fri, 31 Dec 1999 23:59:59 GMT", "1e9", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := ParseRetryAfter(v, time.Unix(1e9, 0))
		if d < 0 || !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, %v", v, d, ok)
		}
		resp := &http.Response{StatusCode: 503, Header: http.Header{"Retry-After": {v}}}
		if w, _ := RetryAfter(resp, 0, time.Unix(1e9, 0)); w < 0 || w > MaxRetryAfter {
			t.Fatalf("RetryAfter(%q) = %v, want within [0, %v]", v, w, MaxRetryAfter)
		}
	})
}

func TestBackoffCapsRetryAfter(t *testing.T) {
	resp := func(code int, ra string) *http.Response {
		h := http.Header{}
		if ra != "" {
			h.Set("Retry-After", ra)
		}
		return &http.Response{StatusCode: code, Header: h}
	}
	b := Backoff(0)
	lo, hi := 100*time.Millisecond, 2*time.Second
	for _, c := range []struct {
		name    string
		resp    *http.Response
		attempt int
		want    time.Duration
	}{
		{"huge Retry-After", resp(503, "100000"), 0, MaxRetryAfter},
		{"overflowing Retry-After", resp(429, "99999999999999999999"), 0, MaxRetryAfter},
		{"short Retry-After", resp(503, "3"), 0, 3 * time.Second},
		{"Retry-After on a 500 is not a 503's", resp(500, "100000"), 1, 200 * time.Millisecond},
		{"no answer", nil, 2, 400 * time.Millisecond},
		{"many attempts", resp(502, ""), 200, hi},
	} {
		if got := b(lo, hi, c.attempt, c.resp); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if got := Backoff(time.Millisecond)(lo, hi, 0, resp(503, "100000")); got != time.Millisecond {
		t.Errorf("cap 1ms: %v", got)
	}
}

func TestRetryAfterExceedsDeadline(t *testing.T) {
	r := &http.Response{StatusCode: 503, Header: http.Header{"Retry-After": {"100000"}}}
	if RetryAfterExceedsDeadline(context.Background(), r, 0) {
		t.Error("no deadline: exceeded")
	}
	long, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if RetryAfterExceedsDeadline(long, r, 0) {
		t.Error("an hour left, a 30 s capped wait: exceeded")
	}
	short, cancel2 := context.WithTimeout(context.Background(), MaxRetryAfter/2)
	defer cancel2()
	if !RetryAfterExceedsDeadline(short, r, 0) {
		t.Error("15 s left, a 30 s capped wait: not exceeded")
	}
	if RetryAfterExceedsDeadline(short, &http.Response{StatusCode: 502, Header: http.Header{}}, 0) {
		t.Error("no Retry-After: exceeded")
	}
}
