package hf

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// RenderLimits bound the work of one rendering. A chat template is code from
// a downloaded file: a template that loops for ever, recurses without end or
// prints without bound ends with an error wrapping ErrTemplateBudget (or the
// context's error) instead of hanging or exhausting memory. A zero field
// takes its default, generous for every real template (a chat of thousands
// of messages and hundreds of tools renders far inside them).
type RenderLimits struct {
	// Steps bounds for-loop iterations, macro calls and the items range()
	// creates, together. Default 250,000: at 2-6 µs per iteration (a
	// shared 2-core machine) a loop exhausts it in about a second, while a
	// chat of thousands of messages needs a few tens of thousands.
	Steps int64
	// OutputBytes bounds the bytes printed, counting output a {% set %}
	// block or a macro call captures as well as the final text, so the
	// rendered prompt is at most this long. Default 64 MiB.
	OutputBytes int64
	// Depth bounds the nesting of macro calls (recursion). Default 500.
	Depth int
}

// Default render limits.
const (
	DefaultRenderSteps       = 250_000
	DefaultRenderOutputBytes = 64 << 20
	DefaultRenderDepth       = 500
)

// ErrTemplateBudget is wrapped by the error of a rendering that exceeded
// its RenderLimits.
var ErrTemplateBudget = errors.New("chat template exceeded its render budget")

func (l RenderLimits) withDefaults() RenderLimits {
	if l.Steps <= 0 {
		l.Steps = DefaultRenderSteps
	}
	if l.OutputBytes <= 0 {
		l.OutputBytes = DefaultRenderOutputBytes
	}
	if l.Depth <= 0 {
		l.Depth = DefaultRenderDepth
	}
	return l
}

// renderBudget is the state of one rendering's limits. The rewritten
// template (jinjasrc.go) calls into it on every print, loop iteration and
// macro call, which is also where cancellation is noticed. Between two such
// calls a template does a bounded amount of work: one expression or
// statement of its source over values that earlier steps built.
type renderBudget struct {
	ctx    context.Context
	limits RenderLimits
	steps  int64
	out    int64
	depth  int
	err    error // sticky: the first error ends the rendering
}

func newRenderBudget(ctx context.Context, l RenderLimits) *renderBudget {
	return &renderBudget{ctx: ctx, limits: l.withDefaults()}
}

// step counts n steps and checks the context.
func (b *renderBudget) step(n int64) error {
	if b.err != nil {
		return b.err
	}
	if err := b.ctx.Err(); err != nil {
		b.err = fmt.Errorf("rendering stopped: %w", err)
		return b.err
	}
	b.steps += n
	if b.steps > b.limits.Steps {
		b.err = fmt.Errorf("more than %d loop iterations, macro calls and range items: %w", b.limits.Steps, ErrTemplateBudget)
		return b.err
	}
	return nil
}

// callables returns the template functions of the budget.
func (b *renderBudget) callables() map[string]jinja.Value {
	none := jinja.NewString("")
	return map[string]jinja.Value{
		fnTick: jinja.NewCallable(fnTick, func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
			return none, b.step(1)
		}),
		fnEnter: jinja.NewCallable(fnEnter, func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
			if err := b.step(1); err != nil {
				return none, err
			}
			b.depth++
			if b.depth > b.limits.Depth {
				b.err = fmt.Errorf("macro calls nested more than %d deep: %w", b.limits.Depth, ErrTemplateBudget)
				return none, b.err
			}
			return none, nil
		}),
		fnLeave: jinja.NewCallable(fnLeave, func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
			b.depth--
			return none, nil
		}),
		fnOut: jinja.NewCallable(fnOut, func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 1 {
				return jinja.Undefined(), fmt.Errorf("print: expected one value, found %d", len(args))
			}
			v := args[0]
			var n int
			switch {
			case v.IsString():
				n = len(v.AsString())
			case v.IsUndefined():
			default:
				n = len(v.String())
			}
			b.out += int64(n)
			if b.out > b.limits.OutputBytes {
				b.err = fmt.Errorf("more than %d bytes printed: %w", b.limits.OutputBytes, ErrTemplateBudget)
				return jinja.Undefined(), b.err
			}
			if b.err != nil {
				return jinja.Undefined(), b.err
			}
			if err := b.ctx.Err(); err != nil {
				b.err = fmt.Errorf("rendering stopped: %w", err)
				return jinja.Undefined(), b.err
			}
			return v, nil
		}),
		"range": jinja.NewCallable("range", b.rangeFn),
		fnIter:  jinja.NewCallable(fnIter, b.iterFn),
	}
}

// iterFn checks a for-loop's iterable as Python's iter() would and its
// length against the steps left, before the library expands it into items
// (a string becomes one item per character).
func (b *renderBudget) iterFn(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), fmt.Errorf("for: expected one iterable, found %d", len(args))
	}
	v := args[0]
	var n int64
	switch {
	case v.IsUndefined():
		return jinja.NewList(nil), nil
	case v.IsString():
		n = int64(len(v.AsString())) // bytes: at least the characters
	case v.IsList():
		n = int64(v.AsList().Len())
	case v.IsDict():
		n = int64(v.AsDict().Len())
	default:
		return jinja.Undefined(), fmt.Errorf("'%s' object is not iterable", pyTypeName(v))
	}
	if left := b.limits.Steps - b.steps; n > left && !(v.IsString() && int64(utf8.RuneCountInString(v.AsString())) <= left) {
		b.err = fmt.Errorf("a loop over %d items: more than the %d loop iterations, macro calls and range items left: %w", n, left, ErrTemplateBudget)
		return jinja.Undefined(), b.err
	}
	return v, nil
}

// rangeFn is Python's range, its items counted as steps before any is made,
// so range(100000000) fails at once instead of allocating.
func (b *renderBudget) rangeFn(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var start, stop, step int64 = 0, 0, 1
	for _, a := range args {
		if !a.IsInt() {
			return jinja.Undefined(), fmt.Errorf("range: expected integers, found %s", kindName(a))
		}
	}
	switch len(args) {
	case 1:
		stop = args[0].AsInt()
	case 2:
		start, stop = args[0].AsInt(), args[1].AsInt()
	case 3:
		start, stop, step = args[0].AsInt(), args[1].AsInt(), args[2].AsInt()
	default:
		return jinja.Undefined(), fmt.Errorf("range expected at most 3 arguments, got %d", len(args))
	}
	if step == 0 {
		return jinja.Undefined(), errors.New("range() arg 3 must not be zero")
	}
	var n uint64 // computed unsigned: stop-start may not fit an int64
	switch {
	case step > 0 && start < stop:
		n = (uint64(stop)-uint64(start)-1)/uint64(step) + 1
	case step < 0 && start > stop:
		n = (uint64(start)-uint64(stop)-1)/(-uint64(step)) + 1
	}
	if n > uint64(b.limits.Steps) {
		b.err = fmt.Errorf("range of %d items: more than %d loop iterations, macro calls and range items: %w", n, b.limits.Steps, ErrTemplateBudget)
		return jinja.Undefined(), b.err
	}
	if err := b.step(int64(n)); err != nil {
		return jinja.Undefined(), err
	}
	items := make([]jinja.Value, n)
	for i := range items {
		items[i] = jinja.NewInt(start + int64(i)*step)
	}
	return jinja.NewList(items), nil
}
