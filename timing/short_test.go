package timing

import (
	"math"
	"testing"
)

// TestIntervalShort: the half width to two significant digits, the center
// to the same place and at most four significant digits, the center alone
// without a half width, "—" when undefined.
func TestIntervalShort(t *testing.T) {
	for _, c := range []struct {
		iv    Interval
		scale float64
		want  string
	}{
		{Interval{N: 2, Center: 35.7, Hi: 35.84}, 1, "35.70 ±0.14"},
		{Interval{N: 9, Center: 12345, Hi: 12345 + 678}, 1, "12350 ±680"},
		{Interval{N: 1, Center: 35.7, Hi: 35.7}, 1, "35.70"},
		{Interval{N: 5, Center: 0.0413, Hi: 0.0420}, 1000, "41.30 ±0.70"},
		{Interval{N: 3, Center: 2.5, Hi: 2.5 + 0.00001}, 1, "2.500 ±0.000"},
		{Interval{N: 0, Center: math.NaN()}, 1, "—"},
	} {
		if got := c.iv.Short(c.scale); got != c.want {
			t.Errorf("%+v × %g: %q, want %q", c.iv, c.scale, got, c.want)
		}
	}
}
