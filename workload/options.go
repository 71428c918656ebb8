package workload

import (
	"fmt"
	"math"
	"time"
)

// The formats' block sizes: tokens per hash id.
const (
	DefaultMooncakeBlock = 512
	DefaultBailianBlock  = 16
)

// Bounds on what one row may claim. A row over a bound is a bad row (a
// refusal, or a counted skip with Options.SkipBad); nothing is allocated
// for it first.
const (
	// MaxLineBytes bounds a line of a JSONL or CSV file and a record of a
	// ShareGPT array (16 MiB). A longer line is a bad row, read past
	// without being held; a longer ShareGPT record ends the read.
	MaxLineBytes = 16 << 20
	// MaxTokens bounds a row's input and output lengths (10⁷ tokens, ten
	// times a million-token context).
	MaxTokens = 10_000_000
	// MaxHashIDs bounds a row's hash ids (2²⁰). A row may also carry no
	// more than ⌈input/B⌉ of them (the block rule), so a row at the 10⁷
	// token bound reaches this one only for blocks below 10 tokens.
	MaxHashIDs = 1 << 20
	// MaxTime bounds a timestamp (after its unit) and a row's At: 100
	// years of 365 days, which holds Unix times in seconds, milliseconds,
	// microseconds or nanoseconds of this century.
	MaxTime = 100 * 365 * 24 * time.Hour
	// maxDepth bounds the nesting of JSON values a reader skips.
	maxDepth = 64
)

// Options select how a file is read. The zero value reads any format
// with its own defaults: zero at the first row, no speedup, every row,
// and a refusal of the whole file at its first bad row.
//
// Time options apply to the timed formats (Mooncake, Bailian, BurstGPT,
// Azure); setting one for ShareGPT or custom JSONL is an error, as is any
// option for a format it does not concern.
//
// # Time
//
// A row's timestamp becomes a duration through Unit (numeric timestamps)
// or as a date (Azure). Its offset is that duration less the zero point:
// the first row's timestamp (the first row that passes the rules, even one
// a filter then drops), or 0 with Absolute. Rows whose offset is below
// Start are dropped, and reading stops at the first row past End. A kept
// row's At is
//
//	At = (offset − Start) / Speedup
//
// so the window's first row goes at once, and a Speedup of 2 halves every
// gap. How other tools' flags map onto Speedup:
//
//	AIPerf  --synthesis-speedup-ratio R       Speedup = R
//	vLLM    --timed-trace-sec-multiplier m    Speedup = 1/m for a trace in seconds;
//	                                          0.001/m for one in ms (vLLM sends at timestamp × m seconds)
//	SGLang  --mooncake-slowdown-factor f      Speedup = 1/f
//	GuideLLM time_scale t                     Speedup = 1/t
//
// AIPerf's --fixed-schedule-auto-offset is the default zero point; its
// default (absolute 0) is Absolute; its --fixed-schedule-start-offset and
// --fixed-schedule-end-offset are Start and End (both inclusive).
//
// # Order
//
// Timestamps must not decrease from one row to the next: a row earlier
// than the one before it is a bad row (rule "order"). With Sort, the
// reader instead reads every row first, sorts them by timestamp (rows with
// equal timestamps keep their file order) and applies the zero point,
// window and Limit to the sorted rows; it then holds the whole trace in
// memory, as AIPerf and SGLang do.
type Options struct {
	// Format is the file's format; "" infers it from the content (the
	// package documentation says how).
	Format Format

	// Unit is the unit of numeric timestamps; 0 is the format's own:
	// milliseconds for Mooncake, seconds for Bailian and BurstGPT.
	Unit time.Duration
	// Absolute measures offsets from timestamp 0 (for Azure, the Unix
	// epoch) instead of from the first row.
	Absolute bool
	// Speedup divides every offset; 0 means 1. It must be positive.
	Speedup float64
	// Start and End select a window of offsets, both inclusive, in the
	// trace's own time (before Speedup). End 0 means no end.
	Start, End time.Duration
	// Sort accepts rows out of time order and sorts them (see Order).
	Sort bool

	// Limit keeps the first Limit rows that pass every other filter, in
	// the order returned (file order, or time order with Sort); 0 keeps
	// all. Reading stops there.
	Limit int
	// MaxInput drops rows whose Input exceeds it (counted in
	// Stats.OverInput), as AIPerf's --synthesis-max-isl does; 0 drops
	// none. Rows that carry text (Input 0) are not affected.
	MaxInput int
	// MinInput drops rows whose Input is below it (counted in
	// Stats.UnderInput): a chat request cannot be shorter than its chat
	// template's own tokens, so a caller that knows them drops such rows
	// rather than refuse the file; 0 drops none. Rows that carry text
	// (Input 0) are not affected. DropUnder applies it to rows already
	// read, for a caller that learns the bound later.
	MinInput int
	// MaxOutput lowers Output to at most MaxOutput (counted in
	// Stats.Capped), as AIPerf's --synthesis-max-osl does; 0 lowers none.
	MaxOutput int

	// BlockSize is the tokens per hash id; 0 is the format's own: 512 for
	// Mooncake, 16 for Bailian. WEKA and SemiAnalysis traces in Mooncake's
	// format use 64.
	BlockSize int

	// SkipBad skips bad rows, counting them per rule in Stats.Bad,
	// instead of refusing the file at the first one. Faults that leave
	// nothing to resume from (a CSV header, a ShareGPT array's syntax) still
	// end the read.
	SkipBad bool

	// Model keeps only the BurstGPT rows of this model ("ChatGPT",
	// "GPT-4"; case-insensitive); the rest are counted in
	// Stats.OtherModel. "" keeps every model.
	Model string

	// AllTurns reads every turn of a ShareGPT conversation, one row per
	// user message (see the package documentation); without it each
	// conversation gives one row, its first user message and what precedes
	// it.
	AllTurns bool
}

// resolved is Options checked against a format, with defaults filled in.
type resolved struct {
	Options
	unit  time.Duration
	block int
}

func (o Options) resolve(f Format) (resolved, error) {
	r := resolved{Options: o, unit: o.Unit, block: o.BlockSize}
	bad := func(format string, args ...any) (resolved, error) {
		return resolved{}, fmt.Errorf("workload: %s: "+format, append([]any{f}, args...)...)
	}
	if !f.timed() {
		switch {
		case o.Unit != 0, o.Absolute, o.Speedup != 0, o.Start != 0, o.End != 0, o.Sort:
			return bad("the format has no timestamps; Unit, Absolute, Speedup, Start, End and Sort apply only to mooncake, bailian, burstgpt and azure")
		}
	}
	if f == Azure && o.Unit != 0 {
		return bad("timestamps are dates; Unit applies only to numeric timestamps")
	}
	if !f.blocks() && o.BlockSize != 0 {
		return bad("the format has no hash ids; BlockSize applies only to mooncake and bailian")
	}
	if f != BurstGPT && o.Model != "" {
		return bad("Model filters only burstgpt rows")
	}
	if f != ShareGPT && o.AllTurns {
		return bad("AllTurns applies only to sharegpt")
	}
	switch {
	case o.Unit < 0:
		return bad("Unit %v must be positive", o.Unit)
	case math.IsNaN(o.Speedup) || math.IsInf(o.Speedup, 0) || o.Speedup < 0:
		return bad("Speedup %g must be a positive finite number", o.Speedup)
	case o.Start < 0 || o.End < 0:
		return bad("Start %v and End %v must not be negative", o.Start, o.End)
	case o.End != 0 && o.End < o.Start:
		return bad("End %v is before Start %v", o.End, o.Start)
	case o.Limit < 0 || o.MaxInput < 0 || o.MinInput < 0 || o.MaxOutput < 0:
		return bad("Limit %d, MaxInput %d, MinInput %d and MaxOutput %d must not be negative", o.Limit, o.MaxInput, o.MinInput, o.MaxOutput)
	case o.BlockSize < 0:
		return bad("BlockSize %d must be positive", o.BlockSize)
	}
	if r.unit == 0 {
		r.unit = f.defaultUnit()
	}
	if r.block == 0 {
		r.block = f.defaultBlock()
	}
	if r.Speedup == 0 {
		r.Speedup = 1
	}
	return r, nil
}

// DropUnder applies Options.MinInput to rows already read: it returns the
// rows whose Input is min or more (and those that carry text, Input 0), in
// order, and the Line of each row dropped, counted in s.UnderInput (and
// taken from s.Rows) when s is not nil. rows is not changed.
func DropUnder(rows []Row, min int, s *Stats) (kept []Row, dropped []int) {
	kept = make([]Row, 0, len(rows))
	for _, r := range rows {
		if r.Input > 0 && r.Input < min {
			dropped = append(dropped, r.Line)
			continue
		}
		kept = append(kept, r)
	}
	if s != nil {
		s.UnderInput += len(dropped)
		s.Rows -= len(dropped)
	}
	return kept, dropped
}
