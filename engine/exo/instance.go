package exo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// CreateInstance asks exo to create in (POST /instance), usually a
// Placement's Instance. exo keeps the instance's id, so the caller knows
// it in advance; the command is asynchronous: WaitReady waits for the
// effect.
func (c *Client) CreateInstance(ctx context.Context, in Instance) (Receipt, error) {
	data, err := c.call(ctx, http.MethodPost, "/instance", nil, map[string]Instance{"instance": in})
	if err != nil {
		return Receipt{}, err
	}
	return receipt("POST /instance", data)
}

// DeleteInstance asks exo to delete instance id (DELETE /instance/{id}).
// An instance that does not exist gives an error matching ErrNotFound.
func (c *Client) DeleteInstance(ctx context.Context, id string) (Receipt, error) {
	data, err := c.call(ctx, http.MethodDelete, "/instance/"+url.PathEscape(id), nil, nil)
	if err != nil {
		return Receipt{}, err
	}
	return receipt("DELETE /instance", data)
}

// Instance returns instance id (GET /instance/{id}); an unknown id gives
// an error matching ErrNotFound.
func (c *Client) Instance(ctx context.Context, id string) (Instance, error) {
	var in Instance
	err := c.getJSON(ctx, "/instance/"+url.PathEscape(id), nil, &in)
	return in, err
}

// Instances lists the cluster's instances (GET /state/instances), in the
// order exo keeps them.
func (c *Client) Instances(ctx context.Context) ([]Instance, error) {
	data, err := c.call(ctx, http.MethodGet, statePath("instances"), nil, nil)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseInstances(data)
}

func parseInstances(data []byte) ([]Instance, error) {
	keys, vals, err := orderedObject(data)
	if err != nil {
		return nil, fmt.Errorf("exo: decoding /state/instances: %w", err)
	}
	out := make([]Instance, 0, len(keys))
	for _, k := range keys {
		var in Instance
		if err := json.Unmarshal(vals[k], &in); err != nil {
			return nil, fmt.Errorf("exo: decoding /state/instances/%s: %w", k, err)
		}
		if in.ID == "" {
			in.ID = k
		}
		out = append(out, in)
	}
	return out, nil
}

// FindInstance returns the first instance of the cluster that serves
// modelID (its full id), for reuse; ok is false when there is none.
func (c *Client) FindInstance(ctx context.Context, modelID string) (in Instance, ok bool, err error) {
	all, err := c.Instances(ctx)
	if err != nil {
		return Instance{}, false, err
	}
	for _, in := range all {
		if in.ModelID == modelID {
			return in, true, nil
		}
	}
	return Instance{}, false, nil
}

// Runners returns the status of every runner in the cluster (GET
// /state/runners).
func (c *Client) Runners(ctx context.Context) (map[string]RunnerStatus, error) {
	var m map[string]RunnerStatus
	err := c.getJSON(ctx, statePath("runners"), nil, &m)
	if errors.Is(err, ErrNotFound) {
		return map[string]RunnerStatus{}, nil
	}
	return m, err
}

// WaitReady polls the cluster state every Options.PollInterval until
// every runner of instance id is RunnerReady (or RunnerRunning, which
// returns to ready). It fails with a *RunnerFailedError when a runner
// reports RunnerFailed, with an error matching ErrInstanceGone when the
// instance appeared and then vanished, and with a *NotReadyError naming
// the last statuses seen when timeout passes (zero means no timeout but
// the context's) or ctx ends; its Seen is "absent" when exo last said the
// instance does not exist and "unknown" when exo answered no poll.
func (c *Client) WaitReady(ctx context.Context, id string, timeout time.Duration) error {
	start := time.Now()
	wctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	seenInstance := false
	lastSeen := "unknown" // until exo answers a poll
	statuses := map[string]string{}
	notReady := func(err error) error {
		if ctx.Err() == nil {
			err = nil // the wait's own timeout
		}
		return &NotReadyError{InstanceID: id, Want: "ready", Waited: time.Since(start), Seen: lastSeen,
			Runners: statuses, Err: err}
	}
	model := ""
	for {
		var in Instance
		err := c.getJSON(wctx, statePath("instances", id), nil, &in)
		switch {
		case errors.Is(err, ErrNotFound):
			if seenInstance {
				return fmt.Errorf("%w: instance %s of %s was deleted (a runner may have failed); last runner statuses %v",
					ErrInstanceGone, id, model, statuses)
			}
			lastSeen = "absent"
		case err != nil:
			if wctx.Err() != nil {
				return notReady(ctx.Err())
			}
			return err
		default:
			seenInstance = true
			lastSeen = "present"
			model = in.ModelID
			runners, err := c.Runners(wctx)
			if err != nil {
				if wctx.Err() != nil {
					return notReady(ctx.Err())
				}
				return err
			}
			ready := len(in.Shards) > 0
			for rid := range in.Shards {
				st, ok := runners[rid]
				if !ok {
					statuses[rid] = "absent"
					ready = false
					continue
				}
				statuses[rid] = st.String()
				switch st.Tag {
				case "RunnerReady", "RunnerRunning":
				case "RunnerFailed":
					node := ""
					for n, r := range in.NodeToRunner {
						if r == rid {
							node = n
						}
					}
					return &RunnerFailedError{InstanceID: id, RunnerID: rid, NodeID: node,
						Message: st.ErrorMessage, Diagnostics: st.Diagnostics}
				default:
					ready = false
				}
			}
			if ready {
				return nil
			}
		}
		if err := sleep(wctx, c.poll); err != nil {
			return notReady(ctx.Err())
		}
	}
}

// WaitGone polls GET /instance/{id} every Options.PollInterval until exo
// answers 404. It fails with a *NotReadyError when timeout passes (zero
// means no timeout but the context's) or ctx ends first; its Seen is
// "present" when exo last answered with the instance and "unknown" when
// exo answered no poll before the wait ended.
func (c *Client) WaitGone(ctx context.Context, id string, timeout time.Duration) error {
	start := time.Now()
	wctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	seen := "unknown"
	for {
		_, err := c.Instance(wctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			return nil
		case err == nil:
			seen = "present"
			err = sleep(wctx, c.poll)
		}
		if err == nil {
			continue
		}
		if wctx.Err() == nil {
			return err
		}
		var cause error
		if ctx.Err() != nil {
			cause = ctx.Err()
		}
		return &NotReadyError{InstanceID: id, Want: "gone", Waited: time.Since(start), Seen: seen, Err: cause}
	}
}

// withTimeout is context.WithTimeout, or a plain cancel when d is zero.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// sleep waits d or until ctx ends, returning ctx's error then.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
