package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/inferbench/inferbench/benchkit"
)

// GCPercent is a flag.Value for --gc-percent, the garbage collector's
// setting while a schedule runs (benchkit.Load.GCPercent): -1 turns
// collection off for the run, 0 leaves GOGC's setting, a positive value
// is the percentage. Set refuses anything else with an error naming the
// choices. Its zero value is 0; programs start it at DefaultGCPercent.
type GCPercent int

// String returns the value in decimal.
func (g *GCPercent) String() string { return strconv.Itoa(int(*g)) }

// Set parses s as an integer of at least -1.
func (g *GCPercent) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("want an integer, got %q", s)
	}
	if n < -1 {
		return fmt.Errorf("want -1 (no collection during the run), 0 (GOGC's setting) or a positive percentage, got %d", n)
	}
	*g = GCPercent(n)
	return nil
}

// IntList is a flag.Value for lists of integers such as --pp 128,512: the
// values are separated by commas or spaces, and a repeated flag adds to the
// list (--pp 128 --pp 512 is the same list).
type IntList []int

// String formats the list as comma-separated integers.
func (l *IntList) String() string {
	if l == nil {
		return ""
	}
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

// Set appends the integers in v; an entry that is not an integer is an
// error naming it, and nothing of v is added then.
func (l *IntList) Set(v string) error {
	var add []int
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("%q is not an integer", f)
		}
		add = append(add, n)
	}
	*l = append(*l, add...)
	return nil
}

// ParseRates reads a comma-separated list of request rates, as a --rate
// flag takes it: positive numbers of requests per second, or "inf" for
// every request at once ("1,2.5,inf"). Spaces around items are allowed;
// an empty item, a number that is not positive or finite, or a repeated
// rate is an error wrapping benchkit.ErrBadLoad.
func ParseRates(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: rate list is empty; want numbers of requests per second or inf, e.g. 1,2,inf", benchkit.ErrBadLoad)
	}
	var rates []float64
	seen := map[float64]bool{}
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		var r float64
		switch strings.ToLower(item) {
		case "inf", "+inf", "infinity":
			r = math.Inf(1)
		default:
			v, err := strconv.ParseFloat(item, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
				return nil, fmt.Errorf("%w: rate %d is %q; want a positive number of requests per second or inf", benchkit.ErrBadLoad, i+1, item)
			}
			r = v
		}
		if seen[r] {
			return nil, fmt.Errorf("%w: rate %q is listed twice", benchkit.ErrBadLoad, item)
		}
		seen[r] = true
		rates = append(rates, r)
	}
	return rates, nil
}
