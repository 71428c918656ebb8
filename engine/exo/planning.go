package exo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// A Download is one entry of a node's download list
// (/state/downloads/{node}): a tagged DownloadPending, DownloadOngoing,
// DownloadCompleted or DownloadFailed.
type Download struct {
	// Tag is the entry's type.
	Tag    string
	NodeID string
	// ModelID is the shard's modelCard.modelId.
	ModelID        string
	Shard          Shard
	ModelDirectory string
	// Total is a completed download's size in bytes.
	Total int64
	// ReadOnly marks a completed download exo must not delete.
	ReadOnly bool
	// Progress is an ongoing download's progress.
	Progress *DownloadProgress
	// ErrorMessage is a failed download's error.
	ErrorMessage string
}

// DownloadProgress is DownloadOngoing's downloadProgress.
type DownloadProgress struct {
	Total, Downloaded, DownloadedThisSession int64
	CompletedFiles, TotalFiles               int
	// Speed is in bytes per second.
	Speed float64
	// ETA is the estimated time left.
	ETA time.Duration
}

// UnmarshalJSON decodes a tagged download entry.
func (d *Download) UnmarshalJSON(data []byte) error {
	tag, body, err := untag(data)
	if err != nil {
		return fmt.Errorf("exo: download: %w", err)
	}
	var w struct {
		NodeID          string          `json:"nodeId"`
		NodeID2         string          `json:"node_id"`
		ShardMetadata   json.RawMessage `json:"shardMetadata"`
		ShardMetadata2  json.RawMessage `json:"shard_metadata"`
		ModelDirectory  string          `json:"modelDirectory"`
		ModelDirectory2 string          `json:"model_directory"`
		Total           memory          `json:"total"`
		ReadOnly        bool            `json:"readOnly"`
		ReadOnly2       bool            `json:"read_only"`
		ErrorMessage    string          `json:"errorMessage"`
		ErrorMessage2   string          `json:"error_message"`
		Progress        *struct {
			Total                 memory  `json:"total"`
			Downloaded            memory  `json:"downloaded"`
			DownloadedThisSession memory  `json:"downloadedThisSession"`
			CompletedFiles        int     `json:"completedFiles"`
			TotalFiles            int     `json:"totalFiles"`
			Speed                 float64 `json:"speed"`
			EtaMs                 float64 `json:"etaMs"`
		} `json:"downloadProgress"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return fmt.Errorf("exo: download %s: %w", tag, err)
	}
	out := Download{
		Tag:            tag,
		NodeID:         pick(w.NodeID, w.NodeID2),
		ModelDirectory: pick(w.ModelDirectory, w.ModelDirectory2),
		Total:          int64(w.Total),
		ReadOnly:       w.ReadOnly || w.ReadOnly2,
		ErrorMessage:   pick(w.ErrorMessage, w.ErrorMessage2),
	}
	sm := w.ShardMetadata
	if len(sm) == 0 {
		sm = w.ShardMetadata2
	}
	if len(sm) > 0 && string(sm) != "null" {
		if err := json.Unmarshal(sm, &out.Shard); err != nil {
			return fmt.Errorf("exo: download %s: %w", tag, err)
		}
		out.ModelID = out.Shard.ModelID
	}
	if p := w.Progress; p != nil {
		out.Progress = &DownloadProgress{
			Total: int64(p.Total), Downloaded: int64(p.Downloaded), DownloadedThisSession: int64(p.DownloadedThisSession),
			CompletedFiles: p.CompletedFiles, TotalFiles: p.TotalFiles, Speed: p.Speed,
			ETA: time.Duration(p.EtaMs * float64(time.Millisecond)),
		}
		if out.Total == 0 {
			out.Total = out.Progress.Total
		}
	}
	*d = out
	return nil
}

// Downloads returns a node's download list; a node exo has none for gives
// an empty list.
func (c *Client) Downloads(ctx context.Context, nodeID string) ([]Download, error) {
	var ds []Download
	err := c.getJSON(ctx, statePath("downloads", nodeID), nil, &ds)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return ds, err
}

// StartDownload asks node to download its shard of a model (POST
// /download/start).
func (c *Client) StartDownload(ctx context.Context, nodeID string, shard Shard) (Receipt, error) {
	body := map[string]any{"targetNodeId": nodeID, "shardMetadata": shard}
	data, err := c.call(ctx, http.MethodPost, "/download/start", nil, body)
	if err != nil {
		return Receipt{}, err
	}
	return receipt("POST /download/start", data)
}

// DeleteDownload deletes a node's downloaded copy of modelID (DELETE
// /download/{node}/{model id}).
func (c *Client) DeleteDownload(ctx context.Context, nodeID, modelID string) error {
	segs := strings.Split(modelID, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	_, err := c.call(ctx, http.MethodDelete, "/download/"+url.PathEscape(nodeID)+"/"+strings.Join(segs, "/"), nil, nil)
	return err
}

// PlanOptions configure Plan. A nil *PlanOptions means the zero value.
type PlanOptions struct {
	// SettleTimeout is how long to wait for a node's disk reading when exo
	// has none yet, with the settle backoff of Placements. Zero means one
	// look; a node still without a reading is not checked (a Warning says
	// so).
	SettleTimeout time.Duration
	// DeleteDownloads allows deleting other completed, non-read-only
	// downloads on a node whose disk cannot hold the model, smallest
	// first, until the freed bytes suffice (exo_bench's
	// --danger-delete-downloads). Downloads of models that a cluster
	// instance serves are never deleted, and nothing is deleted when even
	// deleting every candidate would not free enough. Without it Plan
	// deletes nothing.
	DeleteDownloads bool
	// Timeout bounds the wait for the downloads. Zero means no bound but
	// the context's.
	Timeout time.Duration
	// PollInterval is the period of download polls. Zero means 1 s.
	PollInterval time.Duration
	// OnProgress, when set, receives each ongoing download's progress at
	// every poll.
	OnProgress func(nodeID string, p DownloadProgress)
}

// A PlanResult is what Plan found and did.
type PlanResult struct {
	// ModelBytes is the model's size, storage_size_megabytes × 1024².
	ModelBytes int64
	// Downloaded lists the nodes that had to download the model, sorted.
	Downloaded []string
	// DownloadDuration is the time from the first download request to the
	// last completion; zero when no node downloaded.
	DownloadDuration time.Duration
	// Deleted lists the downloads deleted to make room.
	Deleted []Download
	// Warnings are checks that could not be made.
	Warnings []error
}

// Plan prepares the nodes of a placement to run card's model, as
// exo_bench's planning phase does, without its gaps:
//
//  1. The model's size is card.StorageBytes(); when it is unknown (0)
//     nothing is checked or downloaded and a Warning says so.
//  2. A node has the model when its download list holds a
//     DownloadCompleted of the model (layer range not compared); one with
//     a DownloadOngoing of it is waited for, not restarted.
//  3. Every other node's free disk (/state/nodeDisk) must hold the whole
//     model: otherwise Plan fails with a *DiskSpaceError, or, with
//     DeleteDownloads, deletes downloads as PlanOptions describes.
//  4. Each such node is asked to download its own shard, and Plan polls
//     until every node has the model: DownloadFailed is a
//     *DownloadFailedError; the wait is bounded by Timeout.
//
// Every node of the placement is checked, not only the first.
func (c *Client) Plan(ctx context.Context, p Placement, card ModelCard, opts *PlanOptions) (PlanResult, error) {
	var o PlanOptions
	if opts != nil {
		o = *opts
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	modelID := pick(p.ModelID, card.FullID())
	res := PlanResult{ModelBytes: card.StorageBytes()}
	if res.ModelBytes <= 0 {
		res.Warnings = append(res.Warnings, fmt.Errorf("exo: plan %s: storage_size_megabytes is unknown (0): no disk check and no download", modelID))
		return res, nil
	}
	nodes := p.Instance.Nodes()
	var need, ongoing []string
	lists := map[string][]Download{}
	for _, n := range nodes {
		ds, err := c.Downloads(ctx, n)
		if err != nil {
			return res, err
		}
		lists[n] = ds
		switch downloadState(ds, modelID) {
		case "DownloadCompleted":
		case "DownloadOngoing", "DownloadPending":
			ongoing = append(ongoing, n)
		default:
			need = append(need, n)
		}
	}
	if len(need) == 0 && len(ongoing) == 0 {
		return res, nil
	}
	for _, n := range need {
		if err := c.checkDisk(ctx, n, modelID, res.ModelBytes, lists[n], &o, &res); err != nil {
			return res, err
		}
	}
	start := time.Now()
	for _, n := range need {
		rid, ok := p.Instance.NodeToRunner[n]
		sh, ok2 := p.Instance.Shards[rid]
		if !ok || !ok2 {
			return res, fmt.Errorf("exo: plan %s: node %s has no shard in the placement's instance", modelID, n)
		}
		if _, err := c.StartDownload(ctx, n, sh); err != nil {
			return res, err
		}
	}
	res.Downloaded = append(append([]string(nil), need...), ongoing...)
	slices.Sort(res.Downloaded)
	if err := c.waitDownloads(ctx, modelID, res.Downloaded, &o); err != nil {
		return res, err
	}
	res.DownloadDuration = time.Since(start)
	return res, nil
}

// downloadState returns the tag of the entry of ds that concerns modelID,
// preferring DownloadCompleted, or "" when there is none.
func downloadState(ds []Download, modelID string) string {
	state := ""
	for _, d := range ds {
		if d.ModelID != modelID {
			continue
		}
		if d.Tag == "DownloadCompleted" {
			return d.Tag
		}
		if state == "" || d.Tag != "DownloadFailed" {
			state = d.Tag
		}
	}
	return state
}

// checkDisk makes sure node n can hold need bytes, deleting downloads
// when o allows it.
func (c *Client) checkDisk(ctx context.Context, n, modelID string, need int64, ds []Download, o *PlanOptions, res *PlanResult) error {
	disk, err := c.NodeDisk(ctx, n)
	if errors.Is(err, ErrNotFound) && o.SettleTimeout > 0 {
		deadline := time.Now().Add(o.SettleTimeout)
		backoff := c.settleBackoff
		for errors.Is(err, ErrNotFound) && time.Until(deadline) > 0 {
			if err := sleep(ctx, min(backoff, time.Until(deadline))); err != nil {
				return fmt.Errorf("exo: waiting for node %s's disk reading: %w", n, err)
			}
			backoff = min(backoff*2, MaxSettleBackoff)
			disk, err = c.NodeDisk(ctx, n)
		}
	}
	if errors.Is(err, ErrNotFound) {
		res.Warnings = append(res.Warnings, fmt.Errorf("exo: node %s reports no disk space: disk check skipped", n))
		return nil
	}
	if err != nil {
		return err
	}
	if disk.Available >= need {
		return nil
	}
	// Candidates: completed, deletable downloads of other models that no
	// instance serves.
	inUse := map[string]bool{modelID: true}
	all, err := c.Instances(ctx)
	if err != nil {
		return err
	}
	for _, in := range all {
		inUse[in.ModelID] = true
	}
	var cands []Download
	var deletable int64
	for _, d := range ds {
		if d.Tag == "DownloadCompleted" && !d.ReadOnly && !inUse[d.ModelID] && d.Total > 0 {
			cands = append(cands, d)
			deletable += d.Total
		}
	}
	slices.SortStableFunc(cands, func(a, b Download) int {
		switch {
		case a.Total < b.Total:
			return -1
		case a.Total > b.Total:
			return 1
		}
		return 0
	})
	derr := &DiskSpaceError{NodeID: n, Need: need, Available: disk.Available, Deletable: deletable}
	if !o.DeleteDownloads || disk.Available+deletable < need {
		return derr
	}
	free := disk.Available
	for _, d := range cands {
		if free >= need {
			break
		}
		if err := c.DeleteDownload(ctx, n, d.ModelID); err != nil {
			return fmt.Errorf("exo: freeing disk on node %s for %s: %w", n, modelID, err)
		}
		free += d.Total
		res.Deleted = append(res.Deleted, d)
	}
	res.Warnings = append(res.Warnings, fmt.Errorf("exo: node %s: deleted %d download(s); its free disk (%d bytes before) is estimated as the sum, exo refreshes it only every 30 s",
		n, len(res.Deleted), disk.Available))
	return nil
}

// waitDownloads polls the download lists of nodes until each holds a
// DownloadCompleted of modelID.
func (c *Client) waitDownloads(ctx context.Context, modelID string, nodes []string, o *PlanOptions) error {
	wctx, cancel := withTimeout(ctx, o.Timeout)
	defer cancel()
	pending := append([]string(nil), nodes...)
	for {
		var still []string
		for _, n := range pending {
			ds, err := c.Downloads(wctx, n)
			if err != nil {
				if wctx.Err() != nil {
					break
				}
				return err
			}
			done := false
			for _, d := range ds {
				if d.ModelID != modelID {
					continue
				}
				switch d.Tag {
				case "DownloadCompleted":
					done = true
				case "DownloadFailed":
					return &DownloadFailedError{NodeID: n, ModelID: modelID, Message: d.ErrorMessage}
				case "DownloadOngoing":
					if o.OnProgress != nil && d.Progress != nil {
						o.OnProgress(n, *d.Progress)
					}
				}
			}
			if !done {
				still = append(still, n)
			}
		}
		if wctx.Err() == nil && len(still) == 0 {
			return nil
		}
		if wctx.Err() == nil {
			pending = still
			_ = sleep(wctx, o.PollInterval)
		}
		if wctx.Err() != nil {
			return fmt.Errorf("exo: downloads of %s not complete on %v after the wait, expected DownloadCompleted on every node: %w",
				modelID, pending, context.Cause(wctx))
		}
	}
}
