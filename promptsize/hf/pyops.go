package hf

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// The checked operations the rewritten template calls (jinjaexpr.go):
// Python's arithmetic, ordering and membership over template values, with
// the errors Python's Jinja2 raises where ardanlabs/jinja would carry on.

// A TemplateExprError is an operation of a chat template that Python's
// Jinja2 refuses, so a server rendering the template with it answers with
// an error: a TypeError (a str added to a list or to None, "in" on none, an
// ordering between a str and an int), a ZeroDivisionError, or an
// UndefinedError (an attribute, item or operation of an undefined value).
// The template needs other input (content as a string rather than a list
// of parts, say) or a fix.
type TemplateExprError struct {
	Kind    string // "TypeError", "UndefinedError" or "ZeroDivisionError", as Python names it
	Line    int    // the line of the template
	Expr    string // the source of the operation
	Message string // what is wrong, in Python's words where Python has some
}

func (e *TemplateExprError) Error() string {
	return fmt.Sprintf("line %d: %s: %s, in %s", e.Line, e.Kind, e.Message, e.Expr)
}

// maxRepeatBytes bounds the value str * n and list * n build.
const maxRepeatBytes = 64 << 20

// pyOps returns the checked operations for a template with these sites.
func pyOps(sites []exprSite) map[string]jinja.Value {
	o := &pyOpsState{sites: sites}
	return map[string]jinja.Value{
		fnAdd:      jinja.NewCallable(fnAdd, o.add),
		fnArith:    jinja.NewCallable(fnArith, o.arith),
		fnNeg:      jinja.NewCallable(fnNeg, o.neg),
		fnCmp:      jinja.NewCallable(fnCmp, o.cmp),
		fnIn:       jinja.NewCallable(fnIn, o.in),
		fnDef:      jinja.NewCallable(fnDef, o.def),
		fnGen:      jinja.NewCallable(fnGen, o.gen),
		fnIterable: jinja.NewCallable(fnIterable, o.iterable),
		fnTest:     jinja.NewCallable(fnTest, o.test),
	}
}

type pyOpsState struct {
	sites []exprSite
}

// site returns the site numbered by v.
func (o *pyOpsState) site(v jinja.Value) (exprSite, error) {
	if !v.IsInt() || v.AsInt() < 0 || v.AsInt() >= int64(len(o.sites)) {
		return exprSite{}, errors.New("internal: a checked operation without its site")
	}
	return o.sites[v.AsInt()], nil
}

func (o *pyOpsState) fail(site exprSite, kind, format string, args ...any) error {
	return &TemplateExprError{Kind: kind, Line: site.Line, Expr: site.Text, Message: fmt.Sprintf(format, args...)}
}

// operandSite returns the site numbered by args[at], or the UndefinedError
// for the first undefined one of the n operands that args starts with.
func (o *pyOpsState) operandSite(args []jinja.Value, at, n int) (exprSite, error) {
	site, err := o.site(args[at])
	if err != nil {
		return exprSite{}, err
	}
	return site, o.undefinedOperand(site, args[:n]...)
}

// undefinedOperand returns the UndefinedError for the first undefined
// value of vals (operands in site order), or nil.
func (o *pyOpsState) undefinedOperand(site exprSite, vals ...jinja.Value) error {
	for i, v := range vals {
		if v.IsUndefined() {
			name := "a value"
			if i < len(site.Operands) {
				name = site.Operands[i]
			}
			return o.fail(site, "UndefinedError", "%s is undefined", name)
		}
	}
	return nil
}

func isPyNumber(v jinja.Value) bool { return v.IsInt() || v.IsFloat() || v.IsBool() }

func pyInt(v jinja.Value) int64 {
	switch {
	case v.IsInt():
		return v.AsInt()
	case v.IsBool() && v.AsBool():
		return 1
	}
	return 0
}

func pyFloat(v jinja.Value) float64 {
	if v.IsFloat() {
		return v.AsFloat()
	}
	return float64(pyInt(v))
}

// add is a + b (args: a, b, site, markup): markup's bit 1 says a is a
// Markup, bit 2 that b is, whose other side is then HTML-escaped.
func (o *pyOpsState) add(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 4 || !args[3].IsInt() {
		return jinja.Undefined(), errors.New("internal: a checked + without its arguments")
	}
	site, err := o.operandSite(args, 2, 2)
	if err != nil {
		return jinja.Undefined(), err
	}
	a, b, markup := args[0], args[1], args[3].AsInt()
	switch {
	case markup != 0 && a.IsString() && b.IsString():
		x, y := a.AsString(), b.AsString()
		if markup&1 == 0 {
			x = htmlEscape(x)
		}
		if markup&2 == 0 {
			y = htmlEscape(y)
		}
		return jinja.NewString(x + y), nil
	case markup&1 != 0:
		return jinja.Undefined(), o.fail(site, "TypeError", "unsupported operand type(s) for +: 'Markup' and '%s'", pyTypeName(b))
	case markup&2 != 0 && !a.IsString() && !a.IsList():
		return jinja.Undefined(), o.fail(site, "TypeError", "unsupported operand type(s) for +: '%s' and 'Markup'", pyTypeName(a))
	case a.IsString():
		if !b.IsString() {
			return jinja.Undefined(), o.fail(site, "TypeError", "can only concatenate str (not %q) to str", pyTypeName(b))
		}
		return jinja.NewString(a.AsString() + b.AsString()), nil
	case a.IsList():
		if !b.IsList() {
			bt := pyTypeName(b)
			if markup&2 != 0 {
				bt = "Markup"
			}
			return jinja.Undefined(), o.fail(site, "TypeError", "can only concatenate list (not %q) to list", bt)
		}
		items := make([]jinja.Value, 0, a.AsList().Len()+b.AsList().Len())
		items = append(items, a.AsList().Items...)
		items = append(items, b.AsList().Items...)
		return jinja.NewList(items), nil
	case isPyNumber(a) && isPyNumber(b):
		if a.IsFloat() || b.IsFloat() {
			return jinja.NewFloat(pyFloat(a) + pyFloat(b)), nil
		}
		return jinja.NewInt(pyInt(a) + pyInt(b)), nil
	}
	return jinja.Undefined(), o.fail(site, "TypeError", "unsupported operand type(s) for +: '%s' and '%s'", pyTypeName(a), pyTypeName(b))
}

// htmlEscape is markupsafe's escape of a str.
func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "'", "&#39;", `"`, "&#34;").Replace(s)
}

// arith is a OP b for -, *, /, //, % and ** (args: a, b, op, site).
func (o *pyOpsState) arith(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 4 || !args[2].IsString() {
		return jinja.Undefined(), errors.New("internal: a checked operator without its arguments")
	}
	site, err := o.operandSite(args, 3, 2)
	if err != nil {
		return jinja.Undefined(), err
	}
	a, b, op := args[0], args[1], args[2].AsString()
	unsupported := func() (jinja.Value, error) {
		return jinja.Undefined(), o.fail(site, "TypeError", "unsupported operand type(s) for %s: '%s' and '%s'", op, pyTypeName(a), pyTypeName(b))
	}
	if op == "%" && a.IsString() {
		// printf-style formatting: a tuple spreads into the arguments.
		fargs := []jinja.Value{a}
		if b.IsList() && strings.HasPrefix(b.String(), "(") {
			fargs = append(fargs, b.AsList().Items...)
		} else {
			fargs = append(fargs, b)
		}
		v, err := filterFormat(fargs, nil)
		if err != nil {
			return jinja.Undefined(), o.fail(site, "TypeError", "%v", err)
		}
		return v, nil
	}
	if op == "*" {
		seq, n := a, b
		if isPyNumber(a) && !a.IsFloat() {
			seq, n = b, a
		}
		if seq.IsString() || seq.IsList() {
			if !n.IsInt() && !n.IsBool() {
				return jinja.Undefined(), o.fail(site, "TypeError", "can't multiply sequence by non-int of type '%s'", pyTypeName(n))
			}
			return o.repeat(site, seq, pyInt(n))
		}
	}
	if !isPyNumber(a) || !isPyNumber(b) {
		return unsupported()
	}
	floats := a.IsFloat() || b.IsFloat()
	x, y := pyInt(a), pyInt(b)
	fx, fy := pyFloat(a), pyFloat(b)
	zero := func(msg string) (jinja.Value, error) {
		return jinja.Undefined(), o.fail(site, "ZeroDivisionError", "%s", msg)
	}
	switch op {
	case "-":
		if floats {
			return jinja.NewFloat(fx - fy), nil
		}
		return jinja.NewInt(x - y), nil
	case "*":
		if floats {
			return jinja.NewFloat(fx * fy), nil
		}
		return jinja.NewInt(x * y), nil
	case "/":
		if fy == 0 && floats {
			return zero("float division by zero")
		}
		if fy == 0 {
			return zero("division by zero")
		}
		return jinja.NewFloat(fx / fy), nil
	case "//":
		if floats {
			if fy == 0 {
				return zero("float floor division by zero")
			}
			return jinja.NewFloat(math.Floor(fx / fy)), nil
		}
		if y == 0 {
			return zero("integer division or modulo by zero")
		}
		q := x / y
		if (x%y != 0) && ((x < 0) != (y < 0)) {
			q--
		}
		return jinja.NewInt(q), nil
	case "%":
		if floats {
			if fy == 0 {
				return zero("float modulo")
			}
			r := math.Mod(fx, fy)
			if r != 0 && (r < 0) != (fy < 0) {
				r += fy
			}
			return jinja.NewFloat(r), nil
		}
		if y == 0 {
			return zero("integer modulo by zero")
		}
		r := x % y
		if r != 0 && (r < 0) != (y < 0) {
			r += y
		}
		return jinja.NewInt(r), nil
	case "**":
		if !floats && y >= 0 {
			r := int64(1)
			for i := int64(0); i < y; i++ {
				next := r * x
				if x != 0 && next/x != r {
					return jinja.NewFloat(math.Pow(fx, fy)), nil
				}
				r = next
				if r == 0 || r == 1 && x == 1 {
					break
				}
			}
			return jinja.NewInt(r), nil
		}
		if fx == 0 && fy < 0 {
			return zero("0.0 cannot be raised to a negative power")
		}
		return jinja.NewFloat(math.Pow(fx, fy)), nil
	}
	return unsupported()
}

// repeat is seq * n for a str or list seq, bounded by maxRepeatBytes.
func (o *pyOpsState) repeat(site exprSite, seq jinja.Value, n int64) (jinja.Value, error) {
	if n <= 0 {
		if seq.IsString() {
			return jinja.NewString(""), nil
		}
		return jinja.NewList(nil), nil
	}
	unit := int64(1)
	if seq.IsString() {
		unit = max(1, int64(len(seq.AsString())))
	} else if l := int64(seq.AsList().Len()); l > 0 {
		unit = l * 16 // a list item costs at least a few words
	}
	if n > maxRepeatBytes/unit {
		return jinja.Undefined(), fmt.Errorf("line %d: %s: a repetition of more than %d bytes: %w", site.Line, site.Text, maxRepeatBytes, ErrTemplateBudget)
	}
	if seq.IsString() {
		return jinja.NewString(strings.Repeat(seq.AsString(), int(n))), nil
	}
	items := make([]jinja.Value, 0, int64(seq.AsList().Len())*n)
	for range n {
		items = append(items, seq.AsList().Items...)
	}
	return jinja.NewList(items), nil
}

// neg is -a or +a (args: a, op, site).
func (o *pyOpsState) neg(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 3 || !args[1].IsString() {
		return jinja.Undefined(), errors.New("internal: a checked unary operator without its arguments")
	}
	site, err := o.operandSite(args, 2, 1)
	if err != nil {
		return jinja.Undefined(), err
	}
	a, op := args[0], args[1].AsString()
	if !isPyNumber(a) {
		return jinja.Undefined(), o.fail(site, "TypeError", "bad operand type for unary %s: '%s'", op, pyTypeName(a))
	}
	sign := int64(1)
	if op == "-" {
		sign = -1
	}
	if a.IsFloat() {
		return jinja.NewFloat(float64(sign) * a.AsFloat()), nil
	}
	return jinja.NewInt(sign * pyInt(a)), nil
}

// cmp is a < b, a <= b, a > b or a >= b (args: a, b, op, site).
func (o *pyOpsState) cmp(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 4 || !args[2].IsString() {
		return jinja.Undefined(), errors.New("internal: a checked comparison without its arguments")
	}
	site, err := o.operandSite(args, 3, 2)
	if err != nil {
		return jinja.Undefined(), err
	}
	a, b, op := args[0], args[1], args[2].AsString()
	c, ok := pyOrder(intKey(a), intKey(b))
	if !ok {
		return jinja.Undefined(), o.fail(site, "TypeError", "'%s' not supported between instances of '%s' and '%s'", op, pyTypeName(a), pyTypeName(b))
	}
	switch op {
	case "<":
		return jinja.NewBool(c < 0), nil
	case "<=":
		return jinja.NewBool(c <= 0), nil
	case ">":
		return jinja.NewBool(c > 0), nil
	}
	return jinja.NewBool(c >= 0), nil
}

// intKey returns the int a canonical decimal string stands for, else v.
// ardanlabs/jinja keeps dict keys as strings, so the int keys of a dict
// literal ({4096: 512} | dictsort, as Seed-OSS iterates) come back as
// "4096"; they order as the ints Python has. A template comparing a real
// digit string with a number, a TypeError in Python, compares numbers here.
func intKey(v jinja.Value) jinja.Value {
	if !v.IsString() {
		return v
	}
	n, err := strconv.ParseInt(v.AsString(), 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != v.AsString() {
		return v
	}
	return jinja.NewInt(n)
}

// pyOrder orders a and b as Python does, or reports that Python does not.
func pyOrder(a, b jinja.Value) (int, bool) {
	switch {
	case isPyNumber(a) && isPyNumber(b):
		if a.IsFloat() || b.IsFloat() {
			x, y := pyFloat(a), pyFloat(b)
			switch {
			case x < y:
				return -1, true
			case x > y:
				return 1, true
			}
			return 0, true
		}
		x, y := pyInt(a), pyInt(b)
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	case a.IsString() && b.IsString():
		return strings.Compare(a.AsString(), b.AsString()), true
	case a.IsList() && b.IsList():
		x, y := a.AsList().Items, b.AsList().Items
		for i := 0; i < len(x) && i < len(y); i++ {
			if x[i].Equals(y[i]) {
				continue
			}
			return pyOrder(x[i], y[i])
		}
		switch {
		case len(x) < len(y):
			return -1, true
		case len(x) > len(y):
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// in is a in b (args: a, b, site).
func (o *pyOpsState) in(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 3 {
		return jinja.Undefined(), errors.New("internal: a checked \"in\" without its arguments")
	}
	site, err := o.site(args[2])
	if err != nil {
		return jinja.Undefined(), err
	}
	a, b := args[0], args[1]
	switch {
	case b.IsUndefined():
		// Jinja2's Undefined iterates as empty.
		return jinja.NewBool(false), nil
	case b.IsString():
		if !a.IsString() {
			return jinja.Undefined(), o.fail(site, "TypeError", "'in <string>' requires string as left operand, not %s", pyTypeName(a))
		}
		return jinja.NewBool(strings.Contains(b.AsString(), a.AsString())), nil
	case b.IsList():
		for _, v := range b.AsList().Items {
			if v.Equals(a) {
				return jinja.NewBool(true), nil
			}
		}
		return jinja.NewBool(false), nil
	case b.IsDict():
		switch {
		case a.IsString():
			return jinja.NewBool(b.AsDict().Has(a.AsString())), nil
		case a.IsList() || a.IsDict():
			return jinja.Undefined(), o.fail(site, "TypeError", "unhashable type: '%s'", pyTypeName(a))
		case a.IsInt():
			return jinja.NewBool(b.AsDict().Has(strconv.FormatInt(a.AsInt(), 10))), nil
		}
		return jinja.NewBool(false), nil
	}
	return jinja.Undefined(), o.fail(site, "TypeError", "argument of type '%s' is not iterable", pyTypeName(b))
}

// def returns obj (args: obj, site), or the UndefinedError of taking an
// attribute or item of it when it is undefined.
func (o *pyOpsState) def(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 {
		return jinja.Undefined(), errors.New("internal: a checked access without its arguments")
	}
	if !args[0].IsUndefined() {
		return args[0], nil
	}
	site, err := o.site(args[1])
	if err != nil {
		return jinja.Undefined(), err
	}
	name := "a value"
	if len(site.Operands) > 0 {
		name = site.Operands[0]
	}
	return jinja.Undefined(), o.fail(site, "UndefinedError", "%s is undefined, so it has no attribute or item", name)
}

// gen is the TypeError of consuming a generator as a list (args: value,
// the filter that made the generator, the consumer, site).
func (o *pyOpsState) gen(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 4 || !args[1].IsString() || !args[2].IsString() {
		return jinja.Undefined(), errors.New("internal: a checked generator without its arguments")
	}
	site, err := o.site(args[3])
	if err != nil {
		return jinja.Undefined(), err
	}
	filter, consumer := args[1].AsString(), args[2].AsString()
	msg := "object of type 'generator' has no len()"
	switch consumer {
	case "tojson":
		msg = "Object of type generator is not JSON serializable"
	case "last":
		msg = "'generator' object is not reversible"
	}
	return jinja.Undefined(), o.fail(site, "TypeError", "%s (|%s returns a generator: add |list before |%s)", msg, filter, consumer)
}

// iterable returns v (args: v, site), or the TypeError of iterating over
// it: none, a number or a callable. Undefined iterates as empty.
func (o *pyOpsState) iterable(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 {
		return jinja.Undefined(), errors.New("internal: a checked iterable without its arguments")
	}
	v := args[0]
	if v.IsUndefined() || v.IsString() || v.IsList() || v.IsDict() {
		return v, nil
	}
	site, err := o.site(args[1])
	if err != nil {
		return jinja.Undefined(), err
	}
	return jinja.Undefined(), o.fail(site, "TypeError", "'%s' object is not iterable", pyTypeName(v))
}

// test runs the test name on v as Jinja2 does (args: v, name, form, site
// and the test's argument, if any); form says what v's expression is
// known to be (testFormGenerator, testFormMarkup). Jinja2's Undefined
// iterates as empty, has a length (0) and __getitem__, and is callable, so
// it is iterable, a sequence and callable; a generator is iterable but no
// sequence; a bool is a number; odd, even and divisibleby are value % n
// compared with 1 or 0, with Python's errors (an undefined value, None, a
// str, a zero divisor).
func (o *pyOpsState) test(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 4 || !args[1].IsString() || !args[2].IsInt() {
		return jinja.Undefined(), errors.New("internal: a checked test without its arguments")
	}
	v, name, form := args[0], args[1].AsString(), args[2].AsInt()
	switch name {
	case "iterable":
		return jinja.NewBool(v.IsUndefined() || v.IsString() || v.IsList() || v.IsDict()), nil
	case "sequence":
		return jinja.NewBool(form&testFormGenerator == 0 && (v.IsUndefined() || v.IsString() || v.IsList() || v.IsDict())), nil
	case "callable":
		return jinja.NewBool(v.IsUndefined() || v.IsCallable()), nil
	case "number":
		return jinja.NewBool(isPyNumber(v)), nil
	case "escaped":
		return jinja.NewBool(form&testFormMarkup != 0), nil
	case "odd", "even", "divisibleby":
		divisor, want := jinja.NewInt(2), int64(0)
		switch {
		case name == "odd":
			want = 1
		case name == "divisibleby":
			if len(args) != 5 {
				return jinja.Undefined(), errors.New("internal: a checked divisibleby without its divisor")
			}
			divisor = args[4]
		}
		r, err := o.arith([]jinja.Value{v, divisor, jinja.NewString("%"), args[3]}, nil)
		if err != nil {
			return jinja.Undefined(), err
		}
		return jinja.NewBool(r.Equals(jinja.NewInt(want))), nil
	}
	return jinja.Undefined(), fmt.Errorf("internal: no checked test %q", name)
}
