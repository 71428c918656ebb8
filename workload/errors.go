package workload

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ErrBadRow is the condition of a row that breaks one of its format's
// rules. Errors returned for it are *RowError values that wrap ErrBadRow,
// so callers test with errors.Is and read the file, line and rule with
// errors.As.
var ErrBadRow = errors.New("workload: bad row")

// A Rule names what a bad row broke; Stats.Bad counts skipped rows by it.
type Rule string

// The rules.
const (
	RuleSyntax     Rule = "syntax"      // not a JSON object, not a CSV record, not a ShareGPT array
	RuleLineLength Rule = "line-length" // a line or record over MaxLineBytes
	RuleTruncated  Rule = "truncated"   // a last line without a line end that does not parse
	RuleHeader     Rule = "header"      // a CSV header without a needed column
	RuleField      Rule = "field"       // a field missing, of the wrong type, or out of its range
	RuleInput      Rule = "input"       // an input length below 1 or over MaxTokens
	RuleOutput     Rule = "output"      // an output length below 1 (0 for datasets) or over MaxTokens
	RuleHashIDs    Rule = "hash-ids"    // hash ids not ⌈input/B⌉ in number, negative, or over MaxHashIDs
	RuleTimestamp  Rule = "timestamp"   // a timestamp negative, not finite, unparsable or over MaxTime
	RuleOrder      Rule = "order"       // a timestamp earlier than the row before it
	RuleRole       Rule = "role"        // a message role the format does not know
)

// A RowError reports a bad row: where it is and the rule it broke.
type RowError struct {
	// File is the name the reader was given.
	File string
	// Line is the 1-based line (Record false) or ShareGPT record (Record
	// true).
	Line   int
	Record bool
	// Rule is the rule the row broke.
	Rule Rule
	// Msg says what was expected and what was found.
	Msg string

	// fatal marks a fault the reader cannot resume after, even with
	// SkipBad.
	fatal bool
}

func (e *RowError) Error() string {
	where := "line"
	if e.Record {
		where = "record"
	}
	return fmt.Sprintf("%s %s %d: %s", e.File, where, e.Line, e.Msg)
}

// Unwrap returns ErrBadRow.
func (e *RowError) Unwrap() error { return ErrBadRow }

// Stats counts what a Reader did with the rows of its file.
type Stats struct {
	// Rows is the number of rows returned.
	Rows int
	// Bad counts the bad rows skipped with Options.SkipBad, per rule.
	Bad map[Rule]int
	// Failed counts BurstGPT failures (Response tokens 0), which are
	// always dropped.
	Failed int
	// OtherModel counts BurstGPT rows dropped by Options.Model.
	OtherModel int
	// NoUser counts ShareGPT conversations dropped for having no user
	// message.
	NoUser int
	// OverInput counts rows dropped by Options.MaxInput, UnderInput those
	// dropped by Options.MinInput (or DropUnder).
	OverInput, UnderInput int
	// BeforeStart counts rows dropped for an offset below Options.Start.
	BeforeStart int
	// AfterEnd and OverLimit count rows read but dropped past Options.End
	// or Options.Limit; only a reader with Sort reads such rows.
	AfterEnd, OverLimit int
	// Stopped reports that reading ended at End or Limit, so the rest of
	// the file, if any, was not read (nor checked).
	Stopped bool
	// Capped counts rows whose Output was lowered to Options.MaxOutput.
	Capped int
}

// BadRows returns the number of bad rows skipped.
func (s Stats) BadRows() int {
	n := 0
	for _, c := range s.Bad {
		n += c
	}
	return n
}

// String summarises the counts in one line, for example
//
//	12031 rows; skipped 2 bad (hash-ids 1, order 1), 5 failures
//
// Counts that are zero are left out.
func (s Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d rows", s.Rows)
	var parts []string
	if n := s.BadRows(); n > 0 {
		var rules []string
		for _, r := range slices.Sorted(maps.Keys(s.Bad)) {
			if s.Bad[r] > 0 {
				rules = append(rules, fmt.Sprintf("%s %d", r, s.Bad[r]))
			}
		}
		parts = append(parts, fmt.Sprintf("%d bad (%s)", n, strings.Join(rules, ", ")))
	}
	for _, c := range []struct {
		n    int
		what string
	}{
		{s.Failed, "failures"},
		{s.OtherModel, "of other models"},
		{s.NoUser, "without a user message"},
		{s.OverInput, "over MaxInput"},
		{s.UnderInput, "under MinInput"},
		{s.BeforeStart, "before Start"},
		{s.AfterEnd, "after End"},
		{s.OverLimit, "over Limit"},
	} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(parts) > 0 {
		b.WriteString("; skipped ")
		b.WriteString(strings.Join(parts, ", "))
	}
	if s.Capped > 0 {
		fmt.Fprintf(&b, "; %d outputs capped", s.Capped)
	}
	if s.Stopped {
		b.WriteString("; stopped at End or Limit")
	}
	return b.String()
}
