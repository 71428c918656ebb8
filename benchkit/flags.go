package benchkit

import (
	"fmt"
	"strconv"
	"strings"
)

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
