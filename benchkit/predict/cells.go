package predict

import (
	"context"
	"fmt"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/timing"
)

// Cells predicts a benchkit.Runner's plan (exo-bench's cells) instead of
// sending it: each repeat of each cell a burst of Concurrency requests of
// exactly PP prompt tokens generating TG, on an idle engine, as the
// Runner sends them one burst after another. The rows are labelled as
// the Runner labels its own (the cell, the repeat, the place in the
// burst's completion order, placement), in the Runner's order, and marked
// Predicted. The Load gives the Model, the Builder, the Nonce and
// AllowEOS; shortID names the model's short id (the Model when empty) and
// placement the instance, as the rows record them; the plan gives the
// cells, the repeats, Stream and Salt. Refused (ErrUnpredictable):
// thinking settings, targets (Until: a repeat count that depends on the
// replies) and UsePrefixCache with unsalted prompts (each burst's
// repeated prompt served from the cache the previous burst left).
func (p *Predictor) Cells(ctx context.Context, plan benchkit.Plan, shortID string, placement benchkit.Placement) ([]benchkit.Request, error) {
	switch {
	case p.Load == nil || p.Load.Builder == nil || p.Load.Model == "":
		return nil, fmt.Errorf("%w: a Load with a Model and a Builder is required", ErrUnpredictable)
	case len(plan.Thinking) > 0:
		return nil, fmt.Errorf("%w: thinking settings are not predicted", ErrUnpredictable)
	case len(plan.Until) > 0:
		return nil, fmt.Errorf("%w: repeats until targets are met depend on the replies", ErrUnpredictable)
	case plan.UsePrefixCache && !plan.Salt:
		return nil, fmt.Errorf("%w: the prefix cache across unsalted bursts is not predicted", ErrUnpredictable)
	}
	if err := plan.Validate(-1); err != nil {
		return nil, err
	}
	if shortID == "" {
		shortID = p.Load.Model
	}
	l := *p.Load
	l.NoStream, l.NoSalt = !plan.Stream, !plan.Salt
	var rows []benchkit.Request
	run := 0
	for _, cell := range plan.Cells() {
		for rpt := range max(plan.Repeat, 1) {
			q := *p
			q.Load, q.RunIndex = &l, p.RunIndex+run
			run++
			r, err := q.Run(ctx, benchkit.Lengths{Input: cell.PP, Output: cell.TG}, benchkit.Traffic{Burst: cell.Concurrency}, timing.SLO{})
			if err != nil {
				return rows, err
			}
			for i, row := range r.Requests { // in completion order
				row.Run, row.Rate, row.ModelShortID = 0, nil, shortID
				row.Placement, row.Concurrency, row.Repeat = placement, cell.Concurrency, rpt
				if cell.Concurrency > 1 {
					ci := i
					row.ConcurrentIndex = &ci
				}
				rows = append(rows, row)
			}
		}
	}
	return rows, nil
}
