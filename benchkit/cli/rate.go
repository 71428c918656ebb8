package cli

import (
	"math"
	"strconv"
)

// FormatRate writes a request rate as --rate and ParseRates take it:
// "inf" for an infinite rate, else the shortest decimal that reads back
// as the same number.
func FormatRate(r float64) string {
	if math.IsInf(r, 1) {
		return "inf"
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}
