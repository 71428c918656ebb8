package timing

import (
	"math"
	"testing"
)

// TestConfidenceIntervalSD: the interval carries the samples' standard
// deviation (n − 1 in the denominator) beside its half width, NaN with
// fewer than two samples.
func TestConfidenceIntervalSD(t *testing.T) {
	iv := ConfidenceInterval([]float64{1000, 1200}, 0.95)
	if want := 100 * math.Sqrt2; math.Abs(iv.SD-want) > 1e-9 {
		t.Errorf("SD of {1000, 1200} = %v, want %v", iv.SD, want)
	}
	if iv := ConfidenceInterval([]float64{2, 4, 4, 4, 5, 5, 7, 9}, 0.95); math.Abs(iv.SD-math.Sqrt(32.0/7)) > 1e-12 {
		t.Errorf("SD = %v, want √(32/7)", iv.SD)
	}
	for _, x := range [][]float64{nil, {3}} {
		if iv := ConfidenceInterval(x, 0.95); !math.IsNaN(iv.SD) {
			t.Errorf("SD of %v = %v, want NaN", x, iv.SD)
		}
	}
}
