package workload

import (
	"fmt"
	"strings"
	"time"
)

// Untimed is Row.At for a row of a format without timing (ShareGPT, custom
// JSONL): the driver's schedule decides when it goes.
const Untimed time.Duration = -1

// A Row is one request of a trace or dataset, as its file describes it.
// Which fields a format fills is listed in the package documentation.
type Row struct {
	// Line is the 1-based line of the row in its file (for ShareGPT, the
	// 1-based record of the JSON array; the turns of one conversation
	// share it), for messages that point back into the file.
	Line int
	// At is when the request is meant to go: its offset from the trace's
	// zero point, less the window's Start, divided by the speedup
	// (Options). It is Untimed for a format without timing.
	At time.Duration
	// Input is the prompt length in tokens; 0 when the row carries text
	// (Messages) instead.
	Input int
	// Output is the generation length asked for (max_tokens), after
	// Options.MaxOutput; 0 when the file gives none.
	Output int
	// HashIDs are the row's prefix-chained block ids (Mooncake, Bailian):
	// id k names blocks 0..k of the prompt together, so two rows share a
	// cached prefix exactly as far as their leading ids agree. Every block
	// is BlockSize tokens (Reader.BlockSize) but the last, which holds the
	// remainder. Nil for formats without them.
	HashIDs []int64
	// Messages are the chat messages of a dataset row (ShareGPT, custom
	// JSONL), oldest first.
	Messages []Message
	// ID is the row's own identifier where the file gives one (Bailian
	// chat_id); Parent is the ID of the request this one follows in its
	// conversation (Bailian parent_chat_id), "" for a root.
	ID, Parent string
	// Session groups the requests of one conversation: AIPerf's
	// session_id in a Mooncake file, BurstGPT's Session ID, the ShareGPT
	// conversation's id with Options.AllTurns. A Bailian session is a
	// chain of Parent links instead; LinkSessions names it.
	Session string
	// Turn is the 1-based turn of the request in its conversation
	// (Bailian turn, ShareGPT turns with Options.AllTurns); 0 when the
	// format has none.
	Turn int
	// Type is the request's kind: Bailian "type" (text, search, image,
	// file) or BurstGPT "Log Type" (Conversation log, API log).
	Type string
}

// Timed reports whether the row has its own send time (At).
func (r Row) Timed() bool { return r.At >= 0 }

// A Message is one chat message of a dataset row.
type Message struct {
	// Role is "system", "user" or "assistant".
	Role string
	// Content is the message's text.
	Content string
}

// A Format names a file format the package reads.
type Format string

// The formats. Each one's fields, defaults and rules are described in the
// package documentation.
const (
	Mooncake Format = "mooncake" // Mooncake FAST'25 trace JSONL
	Bailian  Format = "bailian"  // Qwen Bailian usage trace JSONL
	BurstGPT Format = "burstgpt" // BurstGPT CSV
	Azure    Format = "azure"    // Azure LLM inference trace CSV
	ShareGPT Format = "sharegpt" // ShareGPT JSON array of conversations
	JSONL    Format = "jsonl"    // custom JSONL: prompt or messages, output_tokens
)

// Formats lists every format, in the order of the package documentation.
func Formats() []Format {
	return []Format{Mooncake, Bailian, BurstGPT, Azure, ShareGPT, JSONL}
}

// ParseFormat returns the format a name selects (case-insensitive).
func ParseFormat(name string) (Format, error) {
	f := Format(strings.ToLower(strings.TrimSpace(name)))
	for _, g := range Formats() {
		if f == g {
			return f, nil
		}
	}
	return "", fmt.Errorf("workload: unknown format %q; want one of mooncake, bailian, burstgpt, azure, sharegpt, jsonl", name)
}

// timed reports whether rows of the format carry send times.
func (f Format) timed() bool { return f != ShareGPT && f != JSONL }

// blocks reports whether rows of the format carry hash ids.
func (f Format) blocks() bool { return f == Mooncake || f == Bailian }

// defaultUnit is the unit of the format's numeric timestamps, 0 when its
// timestamps are not numbers.
func (f Format) defaultUnit() time.Duration {
	switch f {
	case Mooncake:
		return time.Millisecond
	case Bailian, BurstGPT:
		return time.Second
	}
	return 0
}

// defaultBlock is the format's block size in tokens, 0 without hash ids.
func (f Format) defaultBlock() int {
	switch f {
	case Mooncake:
		return DefaultMooncakeBlock
	case Bailian:
		return DefaultBailianBlock
	}
	return 0
}
