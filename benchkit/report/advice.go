package report

// advise gives a warning's text its stable code and what to do about
// it; a warning no code knows is "other", to be read as it stands.
func advise(text string) (code, advice string) {
	return "other", "read the message: it says what limits the figures"
}
