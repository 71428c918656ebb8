package benchkit

import (
	"math"

	"github.com/inferbench/inferbench/timing"
)

// finite returns a pointer to v, or nil when v is NaN or infinite, for
// JSON fields where an undefined figure is null.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func intervalJSON(iv timing.Interval) IntervalJSON {
	j := IntervalJSON{Center: finite(iv.Center), Lo: finite(iv.Lo), Hi: finite(iv.Hi), N: iv.N, Confidence: iv.Confidence}
	if iv.N >= 2 {
		j.SD = finite(iv.SD)
	}
	return j
}
