//go:build !linux

package energy

import (
	"context"
	"fmt"
	"runtime"
)

func (p Powercap) read(ctx context.Context) ([]Reading, error) {
	return nil, fmt.Errorf("%w: powercap is Linux only, this is %s", ErrUnavailable, runtime.GOOS)
}

func (p Powercap) counterMax(ctx context.Context, node string) (float64, error) {
	return 0, fmt.Errorf("%w: powercap is Linux only, this is %s", ErrUnavailable, runtime.GOOS)
}
