package hf

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// Filters whose ardanlabs/jinja behaviour differs from Jinja2 under
// transformers' settings. The template rewriter (jinjasrc.go) renames each
// use of them to "inferbench_" + name; pyFilters supplies the replacements.

func pyFilters() map[string]jinja.Value {
	m := map[string]jinja.Value{}
	add := func(name string, fn func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error)) {
		m["inferbench_"+name] = jinja.NewCallable(name, fn)
	}
	add("tojson", filterToJSON)
	add("items", filterItems)
	add("format", filterFormat)
	add("length", filterLength)
	add("count", filterLength)
	add("from_json", func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
		return jinja.Undefined(), errors.New("no filter named 'from_json'")
	})
	return m
}

// filterToJSON is transformers' tojson: json.dumps(x, ensure_ascii=False,
// indent=indent, separators=separators, sort_keys=False), every argument
// overridable. Without indent the separators are ", " and ": ", with it ","
// and ": " and a newline plus indent per level (indent=0: newlines only).
func filterToJSON(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), errors.New("tojson: no value")
	}
	e := pyJSON{item: ", ", key: ": "}
	if v, ok := kwargs["indent"]; ok && !v.IsNone() {
		switch {
		case v.IsInt():
			if n := v.AsInt(); n > 0 {
				if n > 64 {
					return jinja.Undefined(), fmt.Errorf("tojson: indent=%d: want at most 64", n)
				}
				e.pad = strings.Repeat(" ", int(n))
			}
		case v.IsString():
			e.pad = v.AsString()
		default:
			return jinja.Undefined(), fmt.Errorf("tojson: indent must be an integer or a string, found %s", kindName(v))
		}
		e.indent, e.item = true, ","
	}
	if s, ok := kwargs["separators"]; ok && !s.IsNone() {
		if !s.IsList() || s.AsList().Len() != 2 || !s.AsList().Get(0).IsString() || !s.AsList().Get(1).IsString() {
			return jinja.Undefined(), errors.New("tojson: separators must be two strings")
		}
		e.item, e.key = s.AsList().Get(0).AsString(), s.AsList().Get(1).AsString()
	}
	if v, ok := kwargs["ensure_ascii"]; ok {
		e.ascii = v.IsTruthy()
	}
	if v, ok := kwargs["sort_keys"]; ok {
		e.sortKeys = v.IsTruthy()
	}
	if err := e.encode(args[0], 0); err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(e.sb.String()), nil
}

// pyJSON writes JSON as Python's json.dumps does.
type pyJSON struct {
	sb              strings.Builder
	pad, item, key  string
	indent          bool
	ascii, sortKeys bool
}

func (e *pyJSON) newline(depth int) {
	if !e.indent {
		return
	}
	e.sb.WriteByte('\n')
	for range depth {
		e.sb.WriteString(e.pad)
	}
}

func (e *pyJSON) encode(v jinja.Value, depth int) error {
	if depth > maxJSONDepth {
		return errors.New("tojson: circular reference detected")
	}
	switch {
	case v.IsNone():
		e.sb.WriteString("null")
	case v.IsUndefined():
		return errors.New("tojson: Object of type Undefined is not JSON serializable")
	case v.IsBool():
		if v.AsBool() {
			e.sb.WriteString("true")
		} else {
			e.sb.WriteString("false")
		}
	case v.IsInt():
		e.sb.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		e.sb.WriteString(pyFloatJSON(v.AsFloat()))
	case v.IsString():
		e.sb.WriteString(pyJSONString(v.AsString(), e.ascii))
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			e.sb.WriteString("[]")
			return nil
		}
		e.sb.WriteByte('[')
		for i, it := range items {
			if i > 0 {
				e.sb.WriteString(e.item)
			}
			e.newline(depth + 1)
			if err := e.encode(it, depth+1); err != nil {
				return err
			}
		}
		e.newline(depth)
		e.sb.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		if len(d.Keys) == 0 {
			e.sb.WriteString("{}")
			return nil
		}
		keys := d.Keys
		if e.sortKeys {
			keys = slices.Clone(keys)
			slices.Sort(keys)
		}
		e.sb.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				e.sb.WriteString(e.item)
			}
			e.newline(depth + 1)
			e.sb.WriteString(pyJSONString(k, e.ascii))
			e.sb.WriteString(e.key)
			if err := e.encode(d.Data[k], depth+1); err != nil {
				return err
			}
		}
		e.newline(depth)
		e.sb.WriteByte('}')
	default:
		return fmt.Errorf("tojson: Object of type %s is not JSON serializable", kindName(v))
	}
	return nil
}

// pyJSONString quotes s as json.dumps does: \" \\ \n \r \t \b \f, other
// control characters as \u00XX, everything else as is (ensure_ascii=False)
// or non-ASCII as \uXXXX with surrogate pairs (ensure_ascii=True).
func pyJSONString(s string, ascii bool) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20:
				fmt.Fprintf(&b, `\u%04x`, r)
			case ascii && r > 0x7e && r < 0x10000:
				fmt.Fprintf(&b, `\u%04x`, r)
			case ascii && r >= 0x10000:
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// pyFloatJSON is Python's float repr as json.dumps writes it: the shortest
// digits that read back, in exponent form below 1e-4 and from 1e16, and a
// ".0" on integral values.
func pyFloatJSON(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return pyFloatRepr(f)
}

func pyFloatRepr(f float64) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	abs := math.Abs(f)
	if abs < 1e-4 || abs >= 1e16 {
		s := strconv.FormatFloat(f, 'e', -1, 64) // 1e+16, 1.5e-05
		mant, exp, _ := strings.Cut(s, "e")
		sign := exp[0]
		exp = strings.TrimLeft(exp[1:], "0")
		if len(exp) < 2 {
			exp = strings.Repeat("0", 2-len(exp)) + exp
		}
		return mant + "e" + string(sign) + exp
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// filterItems is Jinja2's items: the (key, value) pairs of a mapping, an
// empty list for undefined, an error for anything else.
func filterItems(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), errors.New("items: expected no arguments")
	}
	v := args[0]
	switch {
	case v.IsUndefined():
		return jinja.NewList(nil), nil
	case !v.IsDict():
		//lint:ignore ST1005 Jinja2's own message, verbatim: it is what users search for
		return jinja.Undefined(), errors.New("Can only get item pairs from a mapping.")
	}
	d := v.AsDict()
	pairs := make([]jinja.Value, len(d.Keys))
	for i, k := range d.Keys {
		pairs[i] = jinja.NewList([]jinja.Value{jinja.NewString(k), d.Data[k]})
	}
	return jinja.NewList(pairs), nil
}

// filterLength is Jinja2's length (and count): len() of a string (in
// characters), list or mapping, 0 for undefined, an error for the rest.
func filterLength(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), errors.New("length: expected no arguments")
	}
	v := args[0]
	switch {
	case v.IsUndefined():
		return jinja.NewInt(0), nil
	case v.IsString():
		return jinja.NewInt(int64(utf8.RuneCountInString(v.AsString()))), nil
	case v.IsList():
		return jinja.NewInt(int64(v.AsList().Len())), nil
	case v.IsDict():
		return jinja.NewInt(int64(v.AsDict().Len())), nil
	}
	return jinja.Undefined(), fmt.Errorf("object of type %s has no len()", pyTypeName(v))
}

// filterFormat is Jinja2's format: printf-style formatting of a string with
// positional arguments (%s, %r, %d, %i, %f, %%; an optional precision for
// %f). A string argument of %s prints as is, other values as Python prints
// them.
func filterFormat(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 || !args[0].IsString() {
		return jinja.Undefined(), errors.New("format: expected a format string")
	}
	if len(kwargs) > 0 {
		return jinja.Undefined(), errors.New("format: keyword arguments are not supported")
	}
	f, vals := args[0].AsString(), args[1:]
	var b strings.Builder
	next := 0
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		i++
		prec := -1
		if i < len(f) && f[i] == '.' {
			j := i + 1
			for j < len(f) && f[j] >= '0' && f[j] <= '9' {
				j++
			}
			p, err := strconv.Atoi(f[i+1 : j])
			if err != nil {
				return jinja.Undefined(), fmt.Errorf("format: bad precision in %q", f)
			}
			prec, i = p, j
		}
		if i >= len(f) {
			return jinja.Undefined(), errors.New("incomplete format")
		}
		c := f[i]
		if c == '%' {
			b.WriteByte('%')
			continue
		}
		if next >= len(vals) {
			return jinja.Undefined(), errors.New("not enough arguments for format string")
		}
		v := vals[next]
		next++
		switch c {
		case 's':
			if v.IsString() {
				b.WriteString(v.AsString())
			} else {
				b.WriteString(pyStr(v))
			}
		case 'r':
			b.WriteString(pyStr(jinja.NewList([]jinja.Value{v}))[1 : len(pyStr(jinja.NewList([]jinja.Value{v})))-1])
		case 'd', 'i':
			switch {
			case v.IsInt():
				b.WriteString(strconv.FormatInt(v.AsInt(), 10))
			case v.IsFloat():
				b.WriteString(strconv.FormatInt(int64(v.AsFloat()), 10))
			case v.IsBool():
				b.WriteString(map[bool]string{true: "1", false: "0"}[v.AsBool()])
			default:
				return jinja.Undefined(), fmt.Errorf("%%%c format: a real number is required, not %s", c, pyTypeName(v))
			}
		case 'f':
			var x float64
			switch {
			case v.IsInt():
				x = float64(v.AsInt())
			case v.IsFloat():
				x = v.AsFloat()
			default:
				return jinja.Undefined(), fmt.Errorf("must be real number, not %s", pyTypeName(v))
			}
			if prec < 0 {
				prec = 6
			}
			b.WriteString(strconv.FormatFloat(x, 'f', prec, 64))
		default:
			return jinja.Undefined(), fmt.Errorf("format: unsupported format character '%c'", c)
		}
	}
	if next < len(vals) {
		return jinja.Undefined(), errors.New("not all arguments converted during string formatting")
	}
	return jinja.NewString(b.String()), nil
}

// pyStr is str(v) as Python prints a template value.
func pyStr(v jinja.Value) string {
	switch {
	case v.IsFloat():
		return pyFloatRepr(v.AsFloat())
	case v.IsUndefined():
		return ""
	case v.IsNone():
		return "None"
	}
	return v.String()
}

// pyTypeName is the Python type name of a template value.
func pyTypeName(v jinja.Value) string {
	switch {
	case v.IsNone():
		return "NoneType"
	case v.IsBool():
		return "bool"
	case v.IsInt():
		return "int"
	case v.IsFloat():
		return "float"
	case v.IsString():
		return "str"
	case v.IsList():
		return "list"
	case v.IsDict():
		return "dict"
	case v.IsUndefined():
		return "Undefined"
	}
	return "object"
}
