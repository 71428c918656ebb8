package benchkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"log/slog"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/promptsize"
)

// A Segment is one share of a load plan split across Count processes (k6's
// execution segments, on the hosts of a Kubernetes Indexed Job or any N
// processes): every process draws the one schedule a single process would
// draw with the same seed, and segment Index sends exactly the requests k
// with k mod Count = Index. The arrival instant, lengths and prompt of
// request k are the same whichever segment sends it, and the union of the
// Count segments is the whole schedule, each request once. Bursts split
// the same way: request k of the burst goes in segment k mod Count.
//
// The zero Segment (and any Count of 1) is the whole plan.
type Segment struct {
	// Index is the segment's number, from 0; Count the number of
	// segments.
	Index, Count int
}

// parseSegment parses "i/N" (0 ≤ i < N). An empty string is the whole plan.
func parseSegment(s string) (Segment, error) {
	if strings.TrimSpace(s) == "" {
		return Segment{}, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	if !ok {
		return Segment{}, fmt.Errorf("%w: %q is not i/N (segment i of N, from 0)", ErrBadSegment, s)
	}
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	n, err2 := strconv.Atoi(strings.TrimSpace(ns))
	if err1 != nil || err2 != nil {
		return Segment{}, fmt.Errorf("%w: %q is not i/N with whole numbers i and N", ErrBadSegment, s)
	}
	seg := Segment{Index: i, Count: n}
	if err := seg.Validate(); err != nil {
		return Segment{}, err
	}
	return seg.norm(), nil
}

// Validate checks 0 ≤ Index < Count, or the zero Segment.
func (s Segment) Validate() error {
	if s == (Segment{}) {
		return nil
	}
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("%w: segment %d/%d: want 0 ≤ i < N", ErrBadSegment, s.Index, s.Count)
	}
	return nil
}

// norm maps every whole-plan segment (0/1) to the zero Segment.
func (s Segment) norm() Segment {
	if s.Count <= 1 {
		return Segment{}
	}
	return s
}

// Split reports whether the segment is a part of a plan split in two or
// more.
func (s Segment) Split() bool { return s.Count > 1 }

// IsZero reports whether s is the whole plan (for JSON's omitzero).
func (s Segment) IsZero() bool { return !s.Split() }

// String returns "i/N", or "0/1" for the whole plan.
func (s Segment) String() string {
	if !s.Split() {
		return "0/1"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// MarshalText writes "i/N".
func (s Segment) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads "i/N" (0 ≤ i < N; spaces around either number
// allowed), as --segment gives it; an empty text is the whole plan. A bad
// one is an error wrapping ErrBadSegment.
func (s *Segment) UnmarshalText(b []byte) error {
	seg, err := parseSegment(string(b))
	if err != nil {
		return err
	}
	*s = seg
	return nil
}

// Owns reports whether request k of the plan is this segment's.
func (s Segment) Owns(k int) bool { return !s.Split() || k%s.Count == s.Index }

// Indices returns the requests of a plan of n that this segment sends, in
// schedule order.
func (s Segment) Indices(n int) []int {
	if !s.Split() {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	var out []int
	for k := s.Index; k < n; k += s.Count {
		out = append(out, k)
	}
	return out
}

// Share returns this segment's part of a cap of total requests in flight:
// ⌊total/N⌋, one more for the first total mod N segments, so that the
// segments' caps add up to total. A total of 0 (no cap) stays 0.
func (s Segment) Share(total int) int {
	if !s.Split() || total <= 0 {
		return total
	}
	share := total / s.Count
	if s.Index < total%s.Count {
		share++
	}
	return share
}

// PlanFields are what a Request of a Load says about the plan it belongs to and the
// timeline it was measured on, so that the rows of the segments of one
// plan, merged (MergeSegments), can be checked and summarised together.
type PlanFields struct {
	// PlanHash identifies the plan (Load.PlanHash): every segment of one
	// plan, and a single process running the whole of it, give the same.
	PlanHash string `json:"plan_hash,omitempty"`
	// Segment is the segment that sent the request; absent for the whole
	// plan.
	Segment Segment `json:"segment,omitzero"`
	// PlanRequests is the number of requests the whole plan schedules.
	PlanRequests int `json:"plan_requests,omitempty"`
	// StartAt is the shared start (Load.StartAt), RFC 3339; IntendedAt
	// the request's intended send instant on that shared timeline,
	// StartAt + intended_send_s. Both absent without a shared start.
	StartAt    string `json:"start_at,omitempty"`
	IntendedAt string `json:"intended_at,omitempty"`
	// PromptSHA256 is the hex SHA-256 of the request's messages as sent,
	// each role and content length-prefixed: two requests have the same
	// hash exactly when they send the same chat.
	PromptSHA256 string `json:"prompt_sha256,omitempty"`
}

// promptHash returns the hex SHA-256 of the prompt's messages, each role
// and content length-prefixed, and of its token ids, so that two requests
// have the same hash exactly when they send the same prompt.
func promptHash(p promptsize.Prompt) string {
	h := sha256.New()
	for _, m := range p.Messages {
		fmt.Fprintf(h, "%d:%s%d:%s", len(m.Role), m.Role, len(m.Content), m.Content)
	}
	if p.TokenIDs != nil { // a completion's token ids, after any messages
		fmt.Fprintf(h, "ids:%d:", len(p.TokenIDs))
		for _, id := range p.TokenIDs {
			fmt.Fprintf(h, "%d,", id)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// planSpec is what PlanHash hashes: everything that decides which requests
// the plan sends and when, and nothing about how it is split or when it
// starts.
type planSpec struct {
	Model        string          `json:"model"`
	Stream       bool            `json:"stream"`
	AllowEOS     bool            `json:"allow_eos"`
	NoSalt       bool            `json:"no_salt"`
	Nonce        string          `json:"nonce"`
	SharedPrefix int             `json:"shared_prefix"`
	Run          int             `json:"run"`
	Lengths      Workload        `json:"lengths"`
	Traffic      Traffic         `json:"traffic"`
	Rate         string          `json:"rate"`
	Request      json.RawMessage `json:"request"`
}

// PlanHash returns the hex SHA-256 that identifies run runIdx of this Load
// with lengths and traffic: the model, streaming, EOS and salt settings,
// the run nonce, the shared prefix, the lengths and the traffic with their
// seeds, and the request template's sampling fields. It leaves out the
// segment, the shared start and the template's headers (credentials), so
// a single process and every segment of the same plan agree on it. Every
// row carries it (PlanFields), and MergeSegments refuses rows of
// different plans. The nonce must be set (a Load draws one in its first
// run).
func (l *Load) PlanHash(runIdx int, w Workload, traffic Traffic) string {
	req := l.Request
	req.Header, req.Messages, req.Model, req.MaxTokens, req.Stream, req.IgnoreEOS = nil, nil, "", 0, false, false
	rb, _ := json.Marshal(req)
	spec := planSpec{Model: l.Model, Stream: !l.NoStream, AllowEOS: l.AllowEOS, NoSalt: l.NoSalt, Nonce: l.Nonce,
		SharedPrefix: l.SharedPrefix, Run: runIdx, Lengths: w, Traffic: traffic,
		Rate: formatRate(traffic.Rate), Request: rb}
	if traffic.Burst > 0 {
		spec.Rate = ""
	}
	b, _ := json.Marshal(spec)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// checkSegment checks a Load's segment and shared start against the plan
// of n requests before anything is built or sent; each error wraps
// ErrBadLoad.
func (l *Load) checkSegment(n int, traffic Traffic) error {
	if err := l.Segment.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadLoad, err)
	}
	seg := l.Segment.norm()
	if !seg.Split() {
		return nil
	}
	switch {
	case traffic.Users > 0:
		return fmt.Errorf("%w: a closed loop cannot be split in segments: each user waits for its own replies", ErrBadLoad)
	case !l.NoSalt && l.Nonce == "":
		return fmt.Errorf("%w: segment %s needs the run nonce every segment shares (Load.Nonce, drawn from the seed); a random one would give each segment other prompts", ErrBadLoad, seg)
	case n <= seg.Index:
		return fmt.Errorf("%w: segment %s has no request: the plan schedules %d; use at most %d segments", ErrBadLoad, seg, n, n)
	case traffic.Burst == 0 && traffic.MaxConcurrency > 0 && traffic.MaxConcurrency < seg.Count:
		return fmt.Errorf("%w: a cap of %d requests in flight cannot be shared by %d segments (each gets ⌊cap/N⌋ or one more); raise it or use fewer segments", ErrBadLoad, traffic.MaxConcurrency, seg.Count)
	}
	return nil
}

// planFields returns the PlanFields every row of run runIdx of a plan of
// n requests shares.
func (l *Load) planFields(runIdx int, w Workload, traffic Traffic, n int) PlanFields {
	f := PlanFields{PlanHash: l.PlanHash(runIdx, w, traffic), Segment: l.Segment.norm(), PlanRequests: n}
	if !l.StartAt.IsZero() {
		f.StartAt = l.StartAt.UTC().Format(time.RFC3339Nano)
	}
	return f
}

// placeRow puts row on the plan's timeline: its plan fields and prompt
// hash, and, with a shared start, its send and end offsets moved from the
// runner's start to StartAt by shift (the runner's start − StartAt; the
// intended offset is the plan's and already from StartAt) and its
// intended instant on the shared timeline.
func (l *Load) placeRow(row *Request, plan PlanFields, p promptsize.Prompt, shift time.Duration) {
	row.PlanFields = plan
	row.PromptSHA256 = promptHash(p)
	if l.StartAt.IsZero() {
		return
	}
	row.SendOffsetS += shift.Seconds()
	row.DoneS += shift.Seconds()
	row.IntendedAt = l.StartAt.Add(seconds(row.IntendedSendS)).UTC().Format(time.RFC3339Nano)
}

// waitStart waits on the Load's clock until StartAt, when set; a start
// already past returns at once (the rows' schedule lag then shows how
// late). The error wraps ctx.Err() when ctx ends first.
func (l *Load) waitStart(ctx context.Context) error {
	if l.StartAt.IsZero() {
		return nil
	}
	var clk concurrency.Clock = concurrency.SystemClock{}
	if l.Clock != nil {
		clk = l.Clock
	}
	lead := l.StartAt.Sub(clk.Now())
	if lead > 0 {
		l.log(ctx, slog.LevelInfo, "waiting for the shared start", "start_at", l.StartAt, "in", lead)
	}
	if err := clk.Sleep(ctx, lead); err != nil {
		return fmt.Errorf("benchkit: interrupted before the shared start at %s: %w", l.StartAt.Format(time.RFC3339), err)
	}
	return nil
}
