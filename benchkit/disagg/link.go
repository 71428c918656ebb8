package disagg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine/exo"
)

// removeLink deletes the run's link and waits until it is no longer listed.
func (d *Benchmark) removeLink(ctx context.Context, st *state) error {
	if st.link == "" {
		return nil
	}
	if _, err := d.Client.DeleteLink(ctx, st.link); err != nil {
		return fmt.Errorf("disagg: delete link %s: %w", st.link, err)
	}
	if err := d.waitLinksGone(ctx, func(l exo.InstanceLink) bool { return l.LinkID == st.link }); err != nil {
		return err
	}
	d.log(ctx, "link deleted", "link", st.link)
	st.link = ""
	return nil
}

// waitLinksGone polls the links until none matches.
func (d *Benchmark) waitLinksGone(ctx context.Context, match func(exo.InstanceLink) bool) error {
	ctx, cancel := context.WithTimeout(ctx, d.linkTimeout())
	defer cancel()
	tick := time.NewTicker(exo.DefaultPollInterval)
	defer tick.Stop()
	for {
		links, err := d.Client.Links(ctx)
		if err == nil && !slices.ContainsFunc(links, match) {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return fmt.Errorf("disagg: a link of this run is still listed after %v: %w", d.linkTimeout(), err)
		case <-tick.C:
		}
	}
}

// removeInstance deletes instance id and waits until it is gone; an
// instance that no longer exists is not an error.
func (d *Benchmark) removeInstance(ctx context.Context, id string) error {
	gone := d.GoneTimeout
	if gone == 0 {
		gone = benchkit.DefaultGoneTimeout
	}
	if _, err := d.Client.DeleteInstance(ctx, id); err != nil && !errors.Is(err, exo.ErrNotFound) {
		return fmt.Errorf("disagg: delete instance %s: %w", id, err)
	}
	if err := d.Client.WaitGone(ctx, id, gone); err != nil {
		return fmt.Errorf("disagg: instance %s not gone: %w", id, err)
	}
	d.log(ctx, "instance deleted", "instance", id)
	return nil
}

// cleanup removes every link that names one of the run's instances (the
// run's own, and one whose creation may have half succeeded), then the
// decode and the prefill instance, with a context that outlives ctx.
func (d *Benchmark) cleanup(ctx context.Context, st *state, res *Result) error {
	if !st.prefill && !st.decode && st.link == "" {
		return nil
	}
	timeout := d.CleanupTimeout
	if timeout <= 0 {
		timeout = DefaultCleanupTimeout
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	ours := []string{d.Pair.Prefill.Instance.ID, d.Pair.Decode.Instance.ID}
	mine := func(l exo.InstanceLink) bool {
		if l.LinkID == st.link {
			return true
		}
		for _, id := range append(slices.Clip(l.PrefillInstances), l.DecodeInstances...) {
			if slices.Contains(ours, id) {
				return true
			}
		}
		return false
	}
	var errs []error
	links, err := d.Client.Links(cctx)
	if err != nil {
		errs = append(errs, fmt.Errorf("list links: %w", err))
	}
	deleted := false
	for _, l := range links {
		if mine(l) {
			if _, err := d.Client.DeleteLink(cctx, l.LinkID); err != nil {
				errs = append(errs, fmt.Errorf("delete link %s: %w", l.LinkID, err))
				continue
			}
			deleted = true
			d.log(cctx, "link deleted", "link", l.LinkID)
		}
	}
	if deleted {
		if err := d.waitLinksGone(cctx, mine); err != nil {
			errs = append(errs, err)
		}
	}
	st.link = ""
	if st.decode {
		if err := d.removeInstance(cctx, d.Pair.Decode.Instance.ID); err != nil {
			errs = append(errs, err)
		} else {
			st.decode = false
		}
	}
	if st.prefill {
		if err := d.removeInstance(cctx, d.Pair.Prefill.Instance.ID); err != nil {
			errs = append(errs, err)
		} else {
			st.prefill = false
		}
	}
	if len(errs) == 0 {
		return nil
	}
	for _, e := range errs {
		res.Warnings = append(res.Warnings, "cleanup: "+e.Error())
	}
	return fmt.Errorf("%w: remove them by hand (DELETE /v1/instance-links/{id}, DELETE /instance/{id}): %w", ErrCleanup, errors.Join(errs...))
}
