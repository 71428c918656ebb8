package benchkit

import "strings"

// unwrapped is s with every run of white space one space: the text of a
// table's prose whatever the terminal's width wrapped.
func unwrapped(s string) string { return strings.Join(strings.Fields(s), " ") }
