package benchkit

import (
	"cmp"
	"slices"

	"github.com/inferbench/inferbench/timing"
)

// A SessionsDocument is the results file of multi-turn sessions
// (Sessions): what was run, and each run of the sessions with its
// summaries by turn and over the run and every turn's row. A program that
// runs the same sessions against several configurations of one engine
// (the embedded engine's prefix cache on and off) puts one run each under
// Runs.
type SessionsDocument struct {
	Meta SessionsMeta  `json:"meta"`
	Runs []SessionsRun `json:"runs"`
}

// SessionsMeta is a SessionsDocument's description of the run: the
// target (RunInfo) and the sessions' settings.
type SessionsMeta struct {
	RunInfo
	Sessions SessionsSettings `json:"sessions"`
	// Predicted says the sessions were computed on the embedded engine's
	// virtual clock (package benchkit/predict), never sent.
	Predicted bool `json:"predicted,omitempty"`
}

// SessionsSettings are the settings of a Sessions in results: the fields
// of the same names, durations in seconds. Trace describes the trace or
// dataset the sessions came from (name, rows and a hash of them), nil for
// synthetic sessions.
type SessionsSettings struct {
	Count           int     `json:"sessions"`
	Turns           int     `json:"turns"`
	TurnsMax        int     `json:"turns_max,omitempty"`
	UserTokens      int     `json:"user_tokens"`
	UserTokensMax   int     `json:"user_tokens_max,omitempty"`
	Output          int     `json:"output_tokens"`
	OutputMax       int     `json:"output_tokens_max,omitempty"`
	MaxActive       int     `json:"max_active,omitempty"`
	Rate            float64 `json:"session_rate,omitempty"`
	Seed            uint64  `json:"seed"`
	ThinkS          float64 `json:"think_s,omitempty"`
	ThinkExp        bool    `json:"think_exp,omitempty"`
	Barrier         bool    `json:"round_barrier,omitempty"`
	Stream          bool    `json:"stream"`
	RecordedReplies bool    `json:"recorded_replies,omitempty"`
	TrimReplies     bool    `json:"trim_replies,omitempty"`
	Trace           *Trace  `json:"trace,omitempty"`
}

// A SessionsRun is one run of the sessions in a SessionsDocument: its
// label (the embedded engine's prefix cache mode, "" for a server's own),
// its summary over the run (ByRun, with the server's view when scraped),
// one summary per turn index (ByTurn) in order, each with its measured
// and theoretical prefix hit rates, and every row.
type SessionsRun struct {
	PrefixCache string        `json:"prefix_cache,omitempty"`
	Summary     Summary       `json:"summary"`
	Turns       []TurnSummary `json:"turns"`
	Requests    []Request     `json:"requests"`
}

// A TurnSummary is the summary of every session's turn Turn (from 1).
type TurnSummary struct {
	Turn int `json:"turn"`
	Summary
}

// Settings returns s's settings as a results document records them.
func (s *Sessions) Settings() SessionsSettings {
	return SessionsSettings{
		Count: s.Count, Turns: s.Turns, TurnsMax: s.TurnsMax,
		UserTokens: s.UserTokens, UserTokensMax: s.UserTokensMax,
		Output: s.Output, OutputMax: s.OutputMax,
		MaxActive: s.MaxActive, Rate: s.Rate, Seed: s.Seed,
		ThinkS: s.Think.Seconds(), ThinkExp: s.ThinkExp, Barrier: s.Barrier, Stream: !s.NoStream,
		RecordedReplies: s.RecordedReplies, TrimReplies: s.TrimReplies, Trace: s.Trace,
	}
}

// Result summarises the rows of one run of s (Summarize by turn and over
// the run, against slo) as a SessionsDocument holds it, labelled with the
// prefix cache mode it ran with.
func (s *Sessions) Result(prefixCache string, rows []Request, slo timing.SLO) SessionsRun {
	r := SessionsRun{PrefixCache: prefixCache, Turns: []TurnSummary{}, Requests: rows}
	for _, sum := range s.Summarize(rows, ByTurn, slo) {
		r.Turns = append(r.Turns, TurnSummary{Turn: sum.Labels.Turn, Summary: sum})
	}
	slices.SortStableFunc(r.Turns, func(a, b TurnSummary) int { return cmp.Compare(a.Turn, b.Turn) })
	if all := s.Summarize(rows, ByRun, slo); len(all) > 0 {
		r.Summary = all[0]
	}
	if r.Requests == nil {
		r.Requests = []Request{}
	}
	return r
}
