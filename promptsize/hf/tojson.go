package hf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// ardanlabs/jinja v1.8.0 implements tojson(indent=N) with encoding/json's
// MarshalIndent over Go maps, which sorts object keys and escapes <, > and
// &. Hugging Face renders with key order kept and nothing HTML-escaped, so a
// template that prints tools that way (the official Llama 3.x template does)
// would count differently from the engine. Builtin filters cannot be
// replaced, so before compiling, a template's tojson calls with an indent
// argument are renamed to indentFilter, which the renderer supplies.

// indentFilter is the name tojson(indent=…) calls are renamed to.
const indentFilter = "inferbench_tojson_indent"

// tojsonIndentCall matches a tojson filter called with an indent keyword.
var tojsonIndentCall = regexp.MustCompile(`\btojson(\s*\(\s*indent\s*=)`)

// rewriteIndentedTojson renames tojson(indent=…) to the indentFilter.
func rewriteIndentedTojson(source string) string {
	return tojsonIndentCall.ReplaceAllString(source, indentFilter+"$1")
}

// tojsonIndent is the indentFilter: JSON as @huggingface/jinja writes it
// (Python's json.dumps with ensure_ascii=False and sort_keys=False): object
// keys in their order, items separated by "," and a newline, keys by ": ",
// each level indented by indent spaces, empty lists and objects as [] and
// {}, and no HTML escaping. separators=(item, key) overrides both
// separators, as in Python.
func tojsonIndent(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.NewString(""), nil
	}
	indent := 0
	if v, ok := kwargs["indent"]; ok && v.IsInt() {
		indent = int(v.AsInt())
	}
	if indent < 0 || indent > 64 {
		return jinja.Undefined(), fmt.Errorf("tojson: indent=%d: want 0 to 64", indent)
	}
	e := jsonIndenter{pad: strings.Repeat(" ", indent), item: ",", key: ": "}
	if indent == 0 {
		e.item = ", "
	}
	if s, ok := kwargs["separators"]; ok && !s.IsNone() && !s.IsUndefined() {
		if !s.IsList() || s.AsList().Len() != 2 || !s.AsList().Get(0).IsString() || !s.AsList().Get(1).IsString() {
			return jinja.Undefined(), fmt.Errorf("tojson: separators must contain two strings")
		}
		e.item, e.key = s.AsList().Get(0).AsString(), s.AsList().Get(1).AsString()
	}
	if err := e.encode(args[0], 0); err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(e.sb.String()), nil
}

type jsonIndenter struct {
	sb             strings.Builder
	pad, item, key string
}

func (e *jsonIndenter) newline(depth int) {
	if e.pad == "" {
		return
	}
	e.sb.WriteByte('\n')
	for range depth {
		e.sb.WriteString(e.pad)
	}
}

func (e *jsonIndenter) encode(v jinja.Value, depth int) error {
	switch {
	case v.IsNone(), v.IsUndefined():
		e.sb.WriteString("null")
	case v.IsBool():
		e.sb.WriteString(strconv.FormatBool(v.AsBool()))
	case v.IsInt():
		e.sb.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		f := v.AsFloat()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("tojson: cannot encode %v", f)
		}
		e.sb.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	case v.IsString():
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v.AsString()); err != nil {
			return err
		}
		e.sb.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	case v.IsList():
		items := v.AsList().Items
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
		if len(items) > 0 {
			e.newline(depth)
		}
		e.sb.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		e.sb.WriteByte('{')
		for i, k := range d.Keys {
			if i > 0 {
				e.sb.WriteString(e.item)
			}
			e.newline(depth + 1)
			if err := e.encode(jinja.NewString(k), depth+1); err != nil {
				return err
			}
			e.sb.WriteString(e.key)
			if err := e.encode(d.Data[k], depth+1); err != nil {
				return err
			}
		}
		if len(d.Keys) > 0 {
			e.newline(depth)
		}
		e.sb.WriteByte('}')
	default:
		return fmt.Errorf("tojson: cannot encode a %s", kindName(v))
	}
	return nil
}
