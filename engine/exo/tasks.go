package exo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// A Task is one entry of the cluster's task list (/state/tasks): a tagged
// task such as TextGeneration. A non-streaming bench request's command id,
// which Cancel takes, is visible only here until its response arrives.
type Task struct {
	// Tag is the task's type ("TextGeneration", ...).
	Tag    string
	TaskID string
	// Status is Pending, Running, Complete, TimedOut, Failed or Cancelled.
	Status     string
	InstanceID string
	// CommandID is the API command that created the task (text
	// generation), the id Cancel takes.
	CommandID string
}

// UnmarshalJSON decodes a tagged task. Its taskParams, which embed the
// whole prompt, are skipped.
func (t *Task) UnmarshalJSON(data []byte) error {
	tag, body, err := untag(data)
	if err != nil {
		return fmt.Errorf("exo: task: %w", err)
	}
	var w struct {
		TaskID      string `json:"taskId"`
		TaskID2     string `json:"task_id"`
		Status      string `json:"taskStatus"`
		Status2     string `json:"task_status"`
		InstanceID  string `json:"instanceId"`
		InstanceID2 string `json:"instance_id"`
		CommandID   string `json:"commandId"`
		CommandID2  string `json:"command_id"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return fmt.Errorf("exo: task %s: %w", tag, err)
	}
	*t = Task{Tag: tag, TaskID: pick(w.TaskID, w.TaskID2), Status: pick(w.Status, w.Status2),
		InstanceID: pick(w.InstanceID, w.InstanceID2), CommandID: pick(w.CommandID, w.CommandID2)}
	return nil
}

// Tasks lists the cluster's tasks in exo's order (GET /state/tasks). exo
// serialises its whole state to answer, prompts included: poll it
// sparingly while a benchmark runs.
func (c *Client) Tasks(ctx context.Context) ([]Task, error) {
	data, err := c.call(ctx, http.MethodGet, statePath("tasks"), nil, nil)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	keys, vals, err := orderedObject(data)
	if err != nil {
		return nil, fmt.Errorf("exo: decoding /state/tasks: %w", err)
	}
	out := make([]Task, 0, len(keys))
	for _, k := range keys {
		var t Task
		if err := json.Unmarshal(vals[k], &t); err != nil {
			return nil, fmt.Errorf("exo: decoding /state/tasks/%s: %w", k, err)
		}
		if t.TaskID == "" {
			t.TaskID = k
		}
		out = append(out, t)
	}
	return out, nil
}
