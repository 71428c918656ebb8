package report

import "github.com/inferbench/inferbench/benchkit/warncode"

// advise gives a warning's text its stable code and what to do about
// it (warncode.Classify); a warning no code knows is "other", to be read
// as it stands. The code and the advice are the catalogue's own words,
// whatever the text: a server's string in a warning cannot choose them.
func advise(text string) (code, advice string) {
	k := warncode.Classify(text)
	return k.Code, k.Advice
}
