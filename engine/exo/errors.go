package exo

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Sentinel errors, for errors.Is.
var (
	// ErrNotFound matches any control-plane call answered with 404 (an
	// unknown instance, a state path that does not exist, a command that
	// is no longer active).
	ErrNotFound = errors.New("exo: not found")
	// ErrModelNotFound: a model name matched neither a short name nor a
	// full id in /models, and adding it was not asked for.
	ErrModelNotFound = errors.New("exo: model not found")
	// ErrInstanceGone: an instance that had appeared in the cluster state
	// disappeared while waiting for it to become ready (exo deletes an
	// instance whose runner failed).
	ErrInstanceGone = errors.New("exo: instance disappeared while waiting for it")
	// ErrDisaggregationDisabled: an instance-link call was refused because
	// the API node runs without ENABLE_DISAGGREGATION=true.
	ErrDisaggregationDisabled = errors.New("exo: prefill/decode disaggregation is disabled")
	// ErrNoMetrics: a node reports no system metrics (exo has them only
	// from macmon, on macOS).
	ErrNoMetrics = errors.New("exo: no node system metrics")
	// ErrResent, wrapped by a Result's warning: the reused connection the
	// request went out on had been closed by the server before any byte
	// of an answer, so the request was written again on another
	// (Result.Resent counts the times); Trace.Start is the attempt that
	// carried it.
	ErrResent = errors.New("exo: request resent on a new connection")
	// ErrUnsupported, wrapped by a Result's warning: the request asked
	// for something exo has no parameter for (a thinking budget), so it
	// was not sent.
	ErrUnsupported = errors.New("exo: not supported by exo's API")
	// ErrHiddenTokens, wrapped by a Result's warning: the usage counts
	// tokens that came in no chunk of a stream with thinking (the tags
	// and headers exo's parsers swallow); Trace.HiddenTokens holds their
	// number, out of the rates measured from chunk arrivals.
	ErrHiddenTokens = errors.New("exo: tokens counted but never streamed")
	// ErrReasoningTokens, wrapped by a Result's warning: the usage's
	// completion_tokens_details.reasoning_tokens disagrees with the
	// tokens of the stream's reasoning chunks.
	ErrReasoningTokens = errors.New("exo: reasoning tokens disagree with the server's usage")

	// ErrEstimatedTokens marks a Warning: a streamed chunk that held the
	// end of a <think> … </think> block left in the content and answer
	// text after it was split in two at its instant, its tokens shared by
	// their bytes, an estimate.
	ErrEstimatedTokens = errors.New("exo: chunk token counts estimated")
)

// An APIError is a failed control-plane call after every attempt it was
// allowed. Err is the cause of the last attempt: an *engine.StatusError
// when the server answered with a status of 400 or more, else the
// transport's error.
type APIError struct {
	// Op is the call, e.g. "GET http://127.0.0.1:52415/models".
	Op string
	// Attempts is how many times the request was sent.
	Attempts int
	// StatusCode is the last answer's HTTP status, 0 when no answer came.
	StatusCode int
	// Err is the last attempt's cause.
	Err error
}

// Error formats e as "exo: <op>: <n> attempt(s), last status <code>: <cause>".
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exo: %s: %d attempt", e.Op, e.Attempts)
	if e.Attempts != 1 {
		b.WriteString("s")
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ", last status %d", e.StatusCode)
	} else {
		b.WriteString(", no response")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the last attempt's cause.
func (e *APIError) Unwrap() error { return e.Err }

// Is reports whether target is ErrNotFound and e is a 404.
func (e *APIError) Is(target error) bool {
	return target == ErrNotFound && e.StatusCode == http.StatusNotFound
}

// A RunnerFailedError is a runner of an instance that reported
// RunnerFailed while the client waited for the instance to become ready.
type RunnerFailedError struct {
	InstanceID string
	RunnerID   string
	// NodeID is the node the runner was assigned to, empty if unknown.
	NodeID string
	// Message is the runner's errorMessage.
	Message string
	// Diagnostics are the runner's tagged diagnostics, each as
	// "<tag>: <message>".
	Diagnostics []string
}

func (e *RunnerFailedError) Error() string {
	s := fmt.Sprintf("exo: instance %s: runner %s", e.InstanceID, e.RunnerID)
	if e.NodeID != "" {
		s += " on node " + e.NodeID
	}
	s += " failed, expected RunnerReady: " + e.Message
	if len(e.Diagnostics) > 0 {
		s += " (" + strings.Join(e.Diagnostics, "; ") + ")"
	}
	return s
}

// A NotReadyError is a wait that ended (its timeout passed, or its context
// ended) before the instance was ready or gone. It names what was last
// seen, and wraps the context's error when the context ended the wait.
type NotReadyError struct {
	InstanceID string
	// Want is what was waited for: "ready" or "gone".
	Want string
	// Waited is how long the wait lasted.
	Waited time.Duration
	// Seen is the instance's last observed state: "absent" when exo said
	// it did not exist (it never appeared), "present" while it still
	// existed (waiting for gone), "unknown" when exo answered no poll of
	// the wait.
	Seen string
	// Runners maps each runner id to the tag of its last observed status
	// ("RunnerLoading 12/48", "RunnerWarmingUp", "absent").
	Runners map[string]string
	// Err is the context's error when the context ended the wait, nil
	// when the wait's own timeout did.
	Err error
}

func (e *NotReadyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exo: instance %s not %s after %v: last seen instance %s", e.InstanceID, e.Want,
		e.Waited.Round(time.Millisecond), e.Seen)
	if len(e.Runners) > 0 {
		ids := make([]string, 0, len(e.Runners))
		for id := range e.Runners {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		b.WriteString(", runners")
		for _, id := range ids {
			fmt.Fprintf(&b, " %s=%s", id, e.Runners[id])
		}
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the context's error, if it ended the wait.
func (e *NotReadyError) Unwrap() error { return e.Err }

// A NoPlacementError says why no placement survived the filters: how many
// previews exo returned, the errors it attached to some of them, and how
// many each filter rule removed.
type NoPlacementError struct {
	ModelID string
	// Previews is the number of previews in the last fetch.
	Previews int
	// Attempts is the number of fetches made within the settle timeout.
	Attempts int
	// PreviewErrors are the distinct error texts of previews exo could not
	// place.
	PreviewErrors []string
	// Removed counts the previews each rule removed ("instance_meta",
	// "sharding", "nodes", "skip_pipeline_jaccl", "skip_tensor_ring",
	// "duplicate", "error", "no_instance").
	Removed map[string]int
}

func (e *NoPlacementError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exo: no placement of %s passed the filters, expected at least one: %d preview(s) after %d fetch(es)",
		e.ModelID, e.Previews, e.Attempts)
	if len(e.Removed) > 0 {
		keys := make([]string, 0, len(e.Removed))
		for k := range e.Removed {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString(", removed by")
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%d", k, e.Removed[k])
		}
	}
	if len(e.PreviewErrors) > 0 {
		b.WriteString("; exo said: ")
		b.WriteString(strings.Join(e.PreviewErrors, "; "))
	}
	return b.String()
}

// A DiskSpaceError is a node whose free disk cannot hold the model.
type DiskSpaceError struct {
	NodeID string
	// Need is the model's size in bytes.
	Need int64
	// Available is the node's free disk in bytes, plus what deleting
	// downloads freed when that was allowed.
	Available int64
	// Deletable is how many bytes of other completed, non-read-only
	// downloads could be deleted (PlanOptions.DeleteDownloads).
	Deletable int64
}

func (e *DiskSpaceError) Error() string {
	return fmt.Sprintf("exo: node %s has %d bytes of free disk, the model needs %d (%d more deletable with DeleteDownloads)",
		e.NodeID, e.Available, e.Need, e.Deletable)
}

// A DownloadFailedError is a node whose download of the model failed.
type DownloadFailedError struct {
	NodeID  string
	ModelID string
	Message string
}

func (e *DownloadFailedError) Error() string {
	return fmt.Sprintf("exo: download of %s on node %s failed, expected DownloadCompleted: %s", e.ModelID, e.NodeID, e.Message)
}
