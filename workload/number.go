package workload

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"time"
)

// A decimal is a number literal split into its parts.
type decimal struct {
	neg         bool
	int, frac   []byte // digits before and after the point
	hasExp      bool
	leadingZero bool // more than one integer digit starting with 0 (not JSON)
}

var errNotNumber = errors.New("not a number")

// splitDecimal parses -?digits(.digits)?([eE][+-]?digits)?, the grammar of
// JSON numbers but for leading zeros, which the caller decides on.
func splitDecimal(b []byte) (decimal, error) {
	var d decimal
	i := 0
	if i < len(b) && b[i] == '-' {
		d.neg = true
		i++
	}
	j := i
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	d.int = b[j:i]
	if len(d.int) == 0 {
		return d, errNotNumber
	}
	d.leadingZero = len(d.int) > 1 && d.int[0] == '0'
	if i < len(b) && b[i] == '.' {
		i++
		j = i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		d.frac = b[j:i]
		if len(d.frac) == 0 {
			return d, errNotNumber
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		d.hasExp = true
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		k := i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		if i == k {
			return d, errNotNumber
		}
	}
	if i != len(b) {
		return d, errNotNumber
	}
	return d, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digits returns the value of at most 19 decimal digits.
func digits(b []byte) (uint64, bool) {
	if len(b) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

// trimZeros drops trailing zeros of fraction digits.
func trimZeros(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == '0' {
		b = b[:len(b)-1]
	}
	return b
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != '0' {
			return false
		}
	}
	return true
}

var pow10 = [...]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// timestamp converts a timestamp literal in unit u to a duration: exactly
// (rounded to the nanosecond) for plain decimals, within float64 precision
// for exponents. It refuses negative values, values over MaxTime and
// anything that is not a number (NaN and infinities included).
func timestamp(lit []byte, u time.Duration, lenient bool) (time.Duration, error) {
	if len(lit) > 64 {
		return 0, fmt.Errorf("timestamp %s is out of range", short(lit))
	}
	d, err := splitDecimal(lit)
	if err != nil || (d.leadingZero && !lenient) {
		return 0, fmt.Errorf("timestamp %s is not a number", quoteLit(lit))
	}
	if d.neg && !(isZero(d.int) && isZero(d.frac)) {
		return 0, fmt.Errorf("timestamp %s is negative", short(lit))
	}
	frac := trimZeros(d.frac)
	if !d.hasExp {
		in, ok := digits(d.int)
		if ok && len(frac) <= 18 {
			unit := uint64(u)
			if in > uint64(MaxTime)/unit {
				return 0, fmt.Errorf("timestamp %s %s exceeds the bound of 100 years", short(lit), unitName(u))
			}
			ns := in * unit
			if len(frac) > 0 {
				f, _ := digits(frac)
				p := pow10[len(frac)]
				hi, lo := bits.Mul64(f, unit)
				q, r := bits.Div64(hi, lo, p) // f < p, so q < unit fits
				if r >= p-r {
					q++
				}
				ns += q
			}
			if ns > uint64(MaxTime) {
				return 0, fmt.Errorf("timestamp %s %s exceeds the bound of 100 years", short(lit), unitName(u))
			}
			return time.Duration(ns), nil
		}
	}
	v, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("timestamp %s is out of range", short(lit))
	}
	if v < 0 {
		return 0, fmt.Errorf("timestamp %s is negative", short(lit))
	}
	ns := v * float64(u)
	if ns > float64(MaxTime) {
		return 0, fmt.Errorf("timestamp %s %s exceeds the bound of 100 years", short(lit), unitName(u))
	}
	return time.Duration(math.Round(ns)), nil
}

// integer converts a number literal with an integral value (6758, 6758.0,
// 6.758e3) to an int64 within ±2⁵³.
func integer(lit []byte, lenient bool) (int64, bool) {
	if len(lit) > 64 {
		return 0, false
	}
	d, err := splitDecimal(lit)
	if err != nil || (d.leadingZero && !lenient) {
		return 0, false
	}
	if !d.hasExp && isZero(d.frac) {
		v, ok := digits(d.int)
		if !ok || v > 1<<53 {
			return 0, false
		}
		if d.neg {
			return -int64(v), true
		}
		return int64(v), true
	}
	v, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || v != math.Trunc(v) || math.Abs(v) > 1<<53 {
		return 0, false
	}
	return int64(v), true
}

// unitName names a timestamp unit for messages.
func unitName(u time.Duration) string {
	switch u {
	case time.Nanosecond:
		return "ns"
	case time.Microsecond:
		return "µs"
	case time.Millisecond:
		return "ms"
	case time.Second:
		return "s"
	case time.Minute:
		return "min"
	case time.Hour:
		return "h"
	}
	return "× " + u.String()
}

// short shortens a literal for a message to 40 bytes.
func short(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// quoteLit quotes a literal for a message, shortened to 40 bytes.
func quoteLit(b []byte) string {
	if len(b) > 40 {
		return strconv.Quote(string(b[:40])) + "…"
	}
	return strconv.Quote(string(b))
}
