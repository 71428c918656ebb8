package hf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Expressions of a chat template are parsed here with Jinja2's grammar
// (jinja2/parser.py: precedence, filters binding tighter than arithmetic,
// tests, conditional expressions, slices) and written back for
// ardanlabs/jinja fully parenthesised, with the operations where Python's
// Jinja2 raises and the library does not turned into checked calls:
//
//   - a + b, a - b, a * b, a / b, a // b, a % b, a ** b, -a, +a become
//     fnAdd, fnArith and fnNeg calls that compute as Python does and
//     raise its TypeError (str + list, None + str, ...) or Jinja2's
//     UndefinedError (an undefined operand);
//   - a < b, a <= b, a > b, a >= b become fnCmp calls (no ordering
//     between str and int, none, undefined);
//   - a in b, a not in b become fnIn calls (in on none or a number is a
//     TypeError; in on undefined is false, as Jinja2's Undefined iterates
//     empty);
//   - obj.attr and obj[key] check obj with fnDef first: an attribute or
//     item of an undefined value is an UndefinedError in Jinja2;
//   - a + b where an operand is a Markup (the result of safe or escape)
//     HTML-escapes the plain str side, as markupsafe does;
//   - tojson, length, count and last applied straight to the generator
//     map, select, reject, selectattr, rejectattr, unique, batch, slice or
//     items return is the TypeError Python raises;
//   - the tests whose library version answers otherwise than Jinja2's
//     become fnTest calls (iterable, sequence, callable, number, escaped,
//     odd, even, divisibleby: an undefined value is iterable, a sequence
//     and callable, as Jinja2's Undefined is; a bool is a number; odd,
//     even and divisibleby compute value % n as Python does), and the
//     tests gt, ge, lt, le and in become fnCmp and fnIn calls.
//
// Every checked call carries a site number: the line and the source text
// of the operation, which the error names. Statements whose syntax is not
// modelled here pass through as the library reads them.

// Names of the checked operations; pyops.go defines them.
const (
	fnAdd      = "inferbench_add"      // (a, b, site, markup)
	fnArith    = "inferbench_arith"    // (a, b, op, site)
	fnNeg      = "inferbench_neg"      // (a, op, site)
	fnCmp      = "inferbench_cmp"      // (a, b, op, site)
	fnIn       = "inferbench_in"       // (a, b, site)
	fnDef      = "inferbench_def"      // (obj, site)
	fnGen      = "inferbench_gen"      // (value, filter, consumer, site)
	fnIterable = "inferbench_iterable" // (value, site): a for loop's iterable
	fnTest     = "inferbench_test"     // (value, name, form, site[, arg]): a test as Jinja2 runs it
)

// An exprSite is one checked operation of a template: where it is and its
// source, for the error it may raise.
type exprSite struct {
	Line     int
	Text     string   // the operation
	Operands []string // the source of each operand
}

// generatorFilters are Jinja2's filters that return a generator, not a list.
var generatorFilters = map[string]bool{
	"map": true, "select": true, "reject": true, "selectattr": true,
	"rejectattr": true, "unique": true, "batch": true, "slice": true,
	"items": true,
}

// pyTests are the tests written as fnTest calls, with their number of
// arguments; a test called otherwise is left to the library.
var pyTests = map[string]int{
	"iterable": 0, "sequence": 0, "callable": 0, "number": 0, "escaped": 0,
	"odd": 0, "even": 0, "divisibleby": 1,
}

// Bits of fnTest's form argument: what the operand is known to be from
// its form.
const (
	testFormGenerator = 1 // a generator filter's result
	testFormMarkup    = 2 // a Markup
)

// cmpTests are the ordering tests and the operator each one is.
var cmpTests = map[string]string{
	"gt": ">", "greaterthan": ">", "ge": ">=", "lt": "<", "lessthan": "<", "le": "<=",
}

// markupFilters return a markupsafe.Markup.
var markupFilters = map[string]bool{"safe": true, "escape": true, "e": true, "forceescape": true}

// maxExprDepth bounds the nesting of a parsed expression.
const maxExprDepth = 200

type etokKind int

const (
	etEOF etokKind = iota
	etName
	etString
	etInt
	etFloat
	etOp
)

type etok struct {
	kind       etokKind
	val        string // name, decoded string, number text (no underscores), operator
	start, end int    // span in the tag's source
}

var exprOperators = []string{"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"}

// tokenizeExpr splits the inside of a tag into Jinja2's tokens.
func tokenizeExpr(s string) ([]etok, error) {
	var toks []etok
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		c := s[i]
		switch {
		case isPySpace(r):
			i += n
		case c == '\'' || c == '"':
			v, m, err := decodePyString(s[i:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, etok{etString, v, i, i + m})
			i += m
		case c >= '0' && c <= '9':
			j := scanDigits(s, i)
			kind := etInt
			prevDot := len(toks) > 0 && toks[len(toks)-1].kind == etOp && toks[len(toks)-1].val == "." && toks[len(toks)-1].end == i
			if !prevDot && j+1 < len(s) && s[j] == '.' && s[j+1] >= '0' && s[j+1] <= '9' {
				j = scanDigits(s, j+1)
				kind = etFloat
			}
			if !prevDot && j < len(s) && (s[j] == 'e' || s[j] == 'E') {
				k := j + 1
				if k < len(s) && (s[k] == '+' || s[k] == '-') {
					k++
				}
				if k < len(s) && s[k] >= '0' && s[k] <= '9' {
					j = scanDigits(s, k)
					kind = etFloat
				}
			}
			toks = append(toks, etok{kind, strings.ReplaceAll(s[i:j], "_", ""), i, j})
			i = j
		case isNameStart(c):
			// ASCII names only: ardanlabs/jinja reads no others (Jinja2
			// would take any Python identifier).
			j := i + 1
			for j < len(s) && (isNameStart(s[j]) || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			toks = append(toks, etok{etName, s[i:j], i, j})
			i = j
		default:
			op := ""
			for _, o := range exprOperators {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, fmt.Errorf("unexpected char %q", r)
			}
			toks = append(toks, etok{etOp, op, i, i + len(op)})
			i += len(op)
		}
	}
	return append(toks, etok{kind: etEOF, start: len(s), end: len(s)}), nil
}

func isNameStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func scanDigits(s string, i int) int {
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '_') {
		i++
	}
	return i
}

type enodeKind int

const (
	enConst  enodeKind = iota // val: the library's text of the constant
	enName                    // val: the name
	enTuple                   // kids: items
	enList                    // kids: items
	enDict                    // kids: key, value, key, value, ...
	enAttr                    // kids[0]: object; val: attribute
	enItem                    // kids[0]: object; kids[1]: key
	enSlice                   // kids[0]: object; kids[1:4]: start, stop, step (nil when absent)
	enCall                    // kids[0]: callee; kids[1:]: positional; kw: keywords
	enFilter                  // kids[0]: operand; kids[1:]: positional; kw; val: name; paren: called
	enTest                    // kids[0]: operand; kids[1:]: arguments; val: name; neg
	enNot                     // kids[0]
	enUnary                   // val: "-" or "+"; kids[0]
	enBin                     // val: operator; kids[0], kids[1]
	enCmp                     // ops; kids: operands
	enCond                    // kids: body, condition, else (nil when absent)
)

type ekw struct {
	name string // "**" for **kwargs
	val  *enode
}

type enode struct {
	kind       enodeKind
	val        string
	kids       []*enode
	kw         []ekw
	ops        []string
	neg, paren bool
	isString   bool // a string constant
	start, end int
}

// exprParser is a recursive-descent parser of Jinja2 expressions.
type exprParser struct {
	toks  []etok
	pos   int
	depth int
}

func (p *exprParser) peek() etok { return p.toks[p.pos] }

func (p *exprParser) next() etok {
	t := p.toks[p.pos]
	if t.kind != etEOF {
		p.pos++
	}
	return t
}

func (p *exprParser) isOp(op string) bool {
	t := p.peek()
	return t.kind == etOp && t.val == op
}

func (p *exprParser) isName(name string) bool {
	t := p.peek()
	return t.kind == etName && t.val == name
}

func (p *exprParser) expectOp(op string) error {
	if !p.isOp(op) {
		return fmt.Errorf("expected %q, found %q", op, p.peek().val)
	}
	p.next()
	return nil
}

func (p *exprParser) enter() error {
	p.depth++
	if p.depth > maxExprDepth {
		return fmt.Errorf("expression nested more than %d deep", maxExprDepth)
	}
	return nil
}

func (p *exprParser) leave() { p.depth-- }

// node makes a node spanning from the token at index from to the last token read.
func (p *exprParser) node(kind enodeKind, from int, kids ...*enode) *enode {
	end := p.toks[from].start
	if p.pos > 0 {
		end = p.toks[p.pos-1].end
	}
	return &enode{kind: kind, kids: kids, start: p.toks[from].start, end: max(end, p.toks[from].start)}
}

// parseTuple is Jinja2's parse_tuple: expressions separated by commas; a
// tuple when there is a comma. withCond false stops at "if" (for loops).
func (p *exprParser) parseTuple(withCond bool, explicit bool) (*enode, error) {
	from := p.pos
	var items []*enode
	isTuple := false
	for {
		if len(items) > 0 {
			if !p.isOp(",") {
				break
			}
			p.next()
			isTuple = true
		}
		if p.tupleEnds(explicit) {
			break
		}
		var e *enode
		var err error
		if withCond {
			e, err = p.parseExpr()
		} else {
			e, err = p.parseOr()
		}
		if err != nil {
			return nil, err
		}
		items = append(items, e)
	}
	if !isTuple {
		if len(items) == 0 {
			if !explicit {
				return nil, fmt.Errorf("expected an expression, found %q", p.peek().val)
			}
			return p.node(enTuple, from), nil
		}
		return items[0], nil
	}
	return p.node(enTuple, from, items...), nil
}

func (p *exprParser) tupleEnds(explicit bool) bool {
	t := p.peek()
	if t.kind == etEOF {
		return true
	}
	if t.kind == etOp && (t.val == ")" || t.val == "]" || t.val == "}") {
		return true
	}
	return !explicit && t.kind == etName && (t.val == "if" || t.val == "recursive")
}

func (p *exprParser) parseExpr() (*enode, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	from := p.pos
	e, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	for p.isName("if") {
		p.next()
		cond, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		var els *enode
		if p.isName("else") {
			p.next()
			if els, err = p.parseExpr(); err != nil {
				return nil, err
			}
		}
		e = p.node(enCond, from, e, cond, els)
	}
	return e, nil
}

func (p *exprParser) parseOr() (*enode, error) {
	return p.parseLogic("or", p.parseAnd)
}

func (p *exprParser) parseAnd() (*enode, error) {
	return p.parseLogic("and", p.parseNot)
}

func (p *exprParser) parseLogic(op string, operand func() (*enode, error)) (*enode, error) {
	from := p.pos
	left, err := operand()
	if err != nil {
		return nil, err
	}
	for p.isName(op) {
		p.next()
		right, err := operand()
		if err != nil {
			return nil, err
		}
		left = p.node(enBin, from, left, right)
		left.val = op
	}
	return left, nil
}

func (p *exprParser) parseNot() (*enode, error) {
	if p.isName("not") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		from := p.pos
		p.next()
		e, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return p.node(enNot, from, e), nil
	}
	return p.parseCompare()
}

func (p *exprParser) parseCompare() (*enode, error) {
	from := p.pos
	first, err := p.parseMath1()
	if err != nil {
		return nil, err
	}
	kids := []*enode{first}
	var ops []string
	for {
		t := p.peek()
		op := ""
		switch {
		case t.kind == etOp && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == ">" || t.val == "<=" || t.val == ">="):
			op = t.val
			p.next()
		case t.kind == etName && t.val == "in":
			op = "in"
			p.next()
		case t.kind == etName && t.val == "not" && p.toks[p.pos+1].kind == etName && p.toks[p.pos+1].val == "in":
			op = "not in"
			p.next()
			p.next()
		}
		if op == "" {
			break
		}
		e, err := p.parseMath1()
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
		kids = append(kids, e)
	}
	if len(ops) == 0 {
		return first, nil
	}
	n := p.node(enCmp, from, kids...)
	n.ops = ops
	return n, nil
}

// parseBinary parses left-associative operators ops over operand.
func (p *exprParser) parseBinary(ops []string, operand func() (*enode, error)) (*enode, error) {
	from := p.pos
	left, err := operand()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != etOp || !containsString(ops, t.val) {
			return left, nil
		}
		p.next()
		right, err := operand()
		if err != nil {
			return nil, err
		}
		left = p.node(enBin, from, left, right)
		left.val = t.val
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *exprParser) parseMath1() (*enode, error) {
	return p.parseBinary([]string{"+", "-"}, p.parseConcat)
}

func (p *exprParser) parseConcat() (*enode, error) {
	return p.parseBinary([]string{"~"}, p.parseMath2)
}

func (p *exprParser) parseMath2() (*enode, error) {
	return p.parseBinary([]string{"*", "/", "//", "%"}, p.parsePow)
}

func (p *exprParser) parsePow() (*enode, error) {
	return p.parseBinary([]string{"**"}, func() (*enode, error) { return p.parseUnary(true) })
}

func (p *exprParser) parseUnary(withFilter bool) (*enode, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	from := p.pos
	var e *enode
	var err error
	if p.isOp("-") || p.isOp("+") {
		op := p.next().val
		operand, err := p.parseUnary(false)
		if err != nil {
			return nil, err
		}
		e = p.node(enUnary, from, operand)
		e.val = op
	} else if e, err = p.parsePrimary(); err != nil {
		return nil, err
	}
	if e, err = p.parsePostfix(e, from); err != nil {
		return nil, err
	}
	if withFilter {
		return p.parseFilterExpr(e, from)
	}
	return e, nil
}

func (p *exprParser) parsePrimary() (*enode, error) {
	from := p.pos
	t := p.next()
	switch t.kind {
	case etName:
		switch t.val {
		case "true", "True":
			return &enode{kind: enConst, val: "true", start: t.start, end: t.end}, nil
		case "false", "False":
			return &enode{kind: enConst, val: "false", start: t.start, end: t.end}, nil
		case "none", "None":
			return &enode{kind: enConst, val: "none", start: t.start, end: t.end}, nil
		}
		return &enode{kind: enName, val: t.val, start: t.start, end: t.end}, nil
	case etString:
		v := t.val
		for p.peek().kind == etString {
			v += p.next().val
		}
		n := p.node(enConst, from)
		n.val, n.isString = quoteForLibrary(v), true
		return n, nil
	case etInt:
		if _, err := strconv.ParseInt(t.val, 10, 64); err != nil {
			return nil, fmt.Errorf("integer %s out of range", t.val)
		}
		return &enode{kind: enConst, val: t.val, start: t.start, end: t.end}, nil
	case etFloat:
		f, err := strconv.ParseFloat(t.val, 64)
		if err != nil {
			return nil, fmt.Errorf("bad float %s", t.val)
		}
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return &enode{kind: enConst, val: s, start: t.start, end: t.end}, nil
	case etOp:
		switch t.val {
		case "(":
			e, err := p.parseTuple(true, true)
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			if e.kind == enTuple {
				e.start, e.end = t.start, p.toks[p.pos-1].end
			}
			return e, nil
		case "[":
			items, err := p.parseItems("]")
			if err != nil {
				return nil, err
			}
			return p.node(enList, from, items...), nil
		case "{":
			var kids []*enode
			for !p.isOp("}") {
				if len(kids) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
					if p.isOp("}") {
						break
					}
				}
				k, err := p.parseExpr()
				if err != nil {
					return nil, err
				}
				if err := p.expectOp(":"); err != nil {
					return nil, err
				}
				v, err := p.parseExpr()
				if err != nil {
					return nil, err
				}
				kids = append(kids, k, v)
			}
			p.next()
			return p.node(enDict, from, kids...), nil
		}
	}
	return nil, fmt.Errorf("unexpected %q", t.val)
}

// parseItems parses comma-separated expressions up to the closing op.
func (p *exprParser) parseItems(closing string) ([]*enode, error) {
	var items []*enode
	for !p.isOp(closing) {
		if len(items) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp(closing) {
				break
			}
		}
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		items = append(items, e)
	}
	p.next()
	return items, nil
}

func (p *exprParser) parsePostfix(e *enode, from int) (*enode, error) {
	for {
		var err error
		switch {
		case p.isOp(".") || p.isOp("["):
			if e, err = p.parseSubscript(e, from); err != nil {
				return nil, err
			}
		case p.isOp("("):
			if e, err = p.parseCall(e, from); err != nil {
				return nil, err
			}
		default:
			return e, nil
		}
	}
}

func (p *exprParser) parseFilterExpr(e *enode, from int) (*enode, error) {
	for {
		var err error
		switch {
		case p.isOp("|"):
			for p.isOp("|") {
				p.next()
				name, err := p.dottedName()
				if err != nil {
					return nil, err
				}
				f := &enode{kind: enFilter, val: name, kids: []*enode{e}}
				if p.isOp("(") {
					c, err := p.parseCall(nil, from)
					if err != nil {
						return nil, err
					}
					f.kids = append(f.kids, c.kids[1:]...)
					f.kw, f.paren = c.kw, true
				}
				f.start, f.end = p.toks[from].start, p.toks[p.pos-1].end
				e = f
			}
		case p.isName("is"):
			p.next()
			neg := false
			if p.isName("not") {
				p.next()
				neg = true
			}
			name, err := p.dottedName()
			if err != nil {
				return nil, err
			}
			t := &enode{kind: enTest, val: name, neg: neg, kids: []*enode{e}}
			nt := p.peek()
			switch {
			case p.isOp("("):
				c, err := p.parseCall(nil, from)
				if err != nil {
					return nil, err
				}
				if len(c.kw) > 0 {
					return nil, errors.New("keyword arguments to a test")
				}
				t.kids = append(t.kids, c.kids[1:]...)
			case nt.kind == etString || nt.kind == etInt || nt.kind == etFloat || p.isOp("[") || p.isOp("{") ||
				nt.kind == etName && nt.val != "else" && nt.val != "or" && nt.val != "and":
				argFrom := p.pos
				arg, err := p.parsePrimary()
				if err != nil {
					return nil, err
				}
				if arg, err = p.parsePostfix(arg, argFrom); err != nil {
					return nil, err
				}
				t.kids = append(t.kids, arg)
			}
			t.start, t.end = p.toks[from].start, p.toks[p.pos-1].end
			e = t
		case p.isOp("("):
			if e, err = p.parseCall(e, from); err != nil {
				return nil, err
			}
		default:
			return e, nil
		}
	}
}

func (p *exprParser) dottedName() (string, error) {
	t := p.next()
	if t.kind != etName {
		return "", fmt.Errorf("expected a name, found %q", t.val)
	}
	name := t.val
	for p.isOp(".") && p.toks[p.pos+1].kind == etName {
		p.next()
		name += "." + p.next().val
	}
	return name, nil
}

func (p *exprParser) parseSubscript(obj *enode, from int) (*enode, error) {
	if p.next().val == "." {
		t := p.next()
		switch t.kind {
		case etName:
			n := p.node(enAttr, from, obj)
			n.val = t.val
			return n, nil
		case etInt:
			key := &enode{kind: enConst, val: t.val, start: t.start, end: t.end}
			return p.node(enItem, from, obj, key), nil
		}
		return nil, fmt.Errorf("expected an attribute name, found %q", t.val)
	}
	// [ ... ]: an index, a slice, or a tuple of them (not modelled).
	var parts [3]*enode
	idx, isSlice := 0, false
	for {
		if p.isOp("]") {
			break
		}
		if p.isOp(":") {
			p.next()
			isSlice = true
			idx++
			if idx > 2 {
				return nil, errors.New("a slice has at most three parts")
			}
			continue
		}
		if parts[idx] != nil {
			return nil, fmt.Errorf("unexpected %q in a subscript", p.peek().val)
		}
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		parts[idx] = e
	}
	p.next()
	if !isSlice {
		if parts[0] == nil {
			return nil, errors.New("an empty subscript")
		}
		return p.node(enItem, from, obj, parts[0]), nil
	}
	return p.node(enSlice, from, obj, parts[0], parts[1], parts[2]), nil
}

// parseCall parses "(args)" after fn; fn nil leaves kids[0] nil.
func (p *exprParser) parseCall(fn *enode, from int) (*enode, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	n := &enode{kind: enCall, kids: []*enode{fn}}
	for !p.isOp(")") {
		if len(n.kids) > 1 || len(n.kw) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp(")") {
				break
			}
		}
		switch {
		case p.isOp("*"):
			return nil, errors.New("*args in a call")
		case p.isOp("**"):
			p.next()
			v, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			n.kw = append(n.kw, ekw{"**", v})
		case p.peek().kind == etName && p.toks[p.pos+1].kind == etOp && p.toks[p.pos+1].val == "=":
			name := p.next().val
			p.next()
			v, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			n.kw = append(n.kw, ekw{name, v})
		default:
			if len(n.kw) > 0 {
				return nil, errors.New("a positional argument after a keyword argument")
			}
			v, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, v)
		}
	}
	p.next()
	n.start, n.end = p.toks[from].start, p.toks[p.pos-1].end
	return n, nil
}

// exprWriter writes parsed expressions for the library and records the
// sites of checked operations.
type exprWriter struct {
	src   string // the tag's source, which node spans index
	line  int    // the line of the tag
	sites *[]exprSite
}

// site records the operation n with its operands and returns its number.
func (w *exprWriter) site(n *enode, operands ...*enode) string {
	s := exprSite{Line: w.line, Text: w.text(n)}
	for _, o := range operands {
		s.Operands = append(s.Operands, w.text(o))
	}
	*w.sites = append(*w.sites, s)
	return strconv.Itoa(len(*w.sites) - 1)
}

// text is the source of n on one line, at most about 120 bytes.
func (w *exprWriter) text(n *enode) string {
	text := strings.Join(strings.Fields(w.src[n.start:n.end]), " ")
	if len(text) > 120 {
		cut := 117
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "..."
	}
	return text
}

// isMarkup reports whether n is known, from its form, to be a Markup.
func isMarkup(n *enode) bool {
	switch n.kind {
	case enFilter:
		return markupFilters[n.val]
	case enBin:
		return n.val == "+" && (isMarkup(n.kids[0]) || isMarkup(n.kids[1]))
	}
	return false
}

// write returns the library source of n: always an atom (a name, a
// literal, a call, a subscript or a parenthesised expression).
func (w *exprWriter) write(n *enode) (string, error) {
	switch n.kind {
	case enConst, enName:
		return n.val, nil
	case enTuple, enList:
		items, err := w.writeAll(n.kids)
		if err != nil {
			return "", err
		}
		if n.kind == enList {
			return "[" + strings.Join(items, ", ") + "]", nil
		}
		if len(items) == 1 {
			return "(" + items[0] + ",)", nil
		}
		return "(" + strings.Join(items, ", ") + ")", nil
	case enDict:
		items, err := w.writeAll(n.kids)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		b.WriteByte('{')
		for i := 0; i < len(items); i += 2 {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(items[i] + ": " + items[i+1])
		}
		b.WriteByte('}')
		return b.String(), nil
	case enAttr, enItem, enSlice:
		obj, err := w.writeObject(n.kids[0], n)
		if err != nil {
			return "", err
		}
		switch n.kind {
		case enAttr:
			return obj + "." + n.val, nil
		case enItem:
			key, err := w.write(n.kids[1])
			if err != nil {
				return "", err
			}
			return obj + "[" + key + "]", nil
		}
		parts := make([]string, 3)
		for i, k := range n.kids[1:] {
			if k != nil {
				if parts[i], err = w.write(k); err != nil {
					return "", err
				}
			}
		}
		if parts[2] == "" {
			return obj + "[" + parts[0] + ":" + parts[1] + "]", nil
		}
		return obj + "[" + parts[0] + ":" + parts[1] + ":" + parts[2] + "]", nil
	case enCall:
		var fn string
		var err error
		if callee := n.kids[0]; callee.kind == enAttr {
			// A method call: the object is checked, the method looked up
			// by the library.
			obj, err := w.writeObject(callee.kids[0], callee)
			if err != nil {
				return "", err
			}
			fn = obj + "." + callee.val
		} else if fn, err = w.write(callee); err != nil {
			return "", err
		}
		args, err := w.writeArgs(n)
		if err != nil {
			return "", err
		}
		return fn + "(" + args + ")", nil
	case enFilter:
		operand := n.kids[0]
		name := n.val
		if overriddenFilters[name] {
			name = "inferbench_" + name
		}
		x, err := w.write(operand)
		if err != nil {
			return "", err
		}
		if operand.kind == enFilter && generatorFilters[operand.val] && (n.val == "tojson" || n.val == "length" || n.val == "count" || n.val == "last") {
			x = fnGen + "(" + x + ", " + quoteForLibrary(operand.val) + ", " + quoteForLibrary(n.val) + ", " + w.site(n, operand) + ")"
		}
		s := "(" + x + "|" + name
		if n.paren {
			args, err := w.writeArgs(n)
			if err != nil {
				return "", err
			}
			s += "(" + args + ")"
		}
		return s + ")", nil
	case enTest:
		if s, ok, err := w.writeCheckedTest(n); ok || err != nil {
			return s, err
		}
		x, err := w.write(n.kids[0])
		if err != nil {
			return "", err
		}
		s := "(" + x + " is "
		if n.neg {
			s += "not "
		}
		s += n.val
		if len(n.kids) > 1 {
			args, err := w.writeAll(n.kids[1:])
			if err != nil {
				return "", err
			}
			s += "(" + strings.Join(args, ", ") + ")"
		}
		return s + ")", nil
	case enNot:
		x, err := w.write(n.kids[0])
		if err != nil {
			return "", err
		}
		return "(not " + x + ")", nil
	case enUnary:
		x, err := w.write(n.kids[0])
		if err != nil {
			return "", err
		}
		return fnNeg + "(" + x + ", " + quoteForLibrary(n.val) + ", " + w.site(n, n.kids[0]) + ")", nil
	case enBin:
		a, err := w.write(n.kids[0])
		if err != nil {
			return "", err
		}
		b, err := w.write(n.kids[1])
		if err != nil {
			return "", err
		}
		switch n.val {
		case "and", "or", "~":
			return "(" + a + " " + n.val + " " + b + ")", nil
		case "+":
			markup := 0
			if isMarkup(n.kids[0]) {
				markup |= 1
			}
			if isMarkup(n.kids[1]) {
				markup |= 2
			}
			return fnAdd + "(" + a + ", " + b + ", " + w.site(n, n.kids...) + ", " + strconv.Itoa(markup) + ")", nil
		}
		return fnArith + "(" + a + ", " + b + ", " + quoteForLibrary(n.val) + ", " + w.site(n, n.kids...) + ")", nil
	case enCmp:
		items, err := w.writeAll(n.kids)
		if err != nil {
			return "", err
		}
		if len(n.ops) > 1 {
			// A chain (a < b < c) is left to the library: checking it
			// would evaluate the middle operands twice.
			var b strings.Builder
			b.WriteString("(" + items[0])
			for i, op := range n.ops {
				b.WriteString(" " + op + " " + items[i+1])
			}
			return b.String() + ")", nil
		}
		a, b := items[0], items[1]
		switch op := n.ops[0]; op {
		case "==", "!=":
			return "(" + a + " " + op + " " + b + ")", nil
		case "in":
			return fnIn + "(" + a + ", " + b + ", " + w.site(n, n.kids...) + ")", nil
		case "not in":
			return "(not " + fnIn + "(" + a + ", " + b + ", " + w.site(n, n.kids...) + "))", nil
		default:
			return fnCmp + "(" + a + ", " + b + ", " + quoteForLibrary(op) + ", " + w.site(n, n.kids...) + ")", nil
		}
	case enCond:
		body, err := w.write(n.kids[0])
		if err != nil {
			return "", err
		}
		cond, err := w.write(n.kids[1])
		if err != nil {
			return "", err
		}
		if n.kids[2] == nil {
			return "(" + body + " if " + cond + ")", nil
		}
		els, err := w.write(n.kids[2])
		if err != nil {
			return "", err
		}
		return "(" + body + " if " + cond + " else " + els + ")", nil
	}
	return "", fmt.Errorf("unknown expression node %d", n.kind)
}

// writeCheckedTest writes the test n as a checked call when its name and
// arity are those of a test the library runs otherwise than Jinja2 (ok
// false: the library's own test will do).
func (w *exprWriter) writeCheckedTest(n *enode) (s string, ok bool, err error) {
	operand, args := n.kids[0], n.kids[1:]
	arity, checked := pyTests[n.val]
	op, cmp := cmpTests[n.val]
	switch {
	case checked && len(args) == arity:
	case (cmp || n.val == "in") && len(args) == 1:
	default:
		return "", false, nil
	}
	items, err := w.writeAll(n.kids)
	if err != nil {
		return "", false, err
	}
	switch {
	case cmp:
		s = fnCmp + "(" + items[0] + ", " + items[1] + ", " + quoteForLibrary(op) + ", " + w.site(n, n.kids...) + ")"
	case n.val == "in":
		s = fnIn + "(" + items[0] + ", " + items[1] + ", " + w.site(n, n.kids...) + ")"
	default:
		form := 0
		if operand.kind == enFilter && generatorFilters[operand.val] {
			form |= testFormGenerator
		}
		if isMarkup(operand) {
			form |= testFormMarkup
		}
		s = fnTest + "(" + items[0] + ", " + quoteForLibrary(n.val) + ", " + strconv.Itoa(form) + ", " + w.site(n, n.kids...)
		for _, a := range items[1:] {
			s += ", " + a
		}
		s += ")"
	}
	if n.neg {
		s = "(not " + s + ")"
	}
	return s, true, nil
}

// writeObject writes the object of an attribute, item or slice access,
// checked to be defined unless its form says it is.
func (w *exprWriter) writeObject(obj, access *enode) (string, error) {
	x, err := w.write(obj)
	if err != nil {
		return "", err
	}
	switch {
	case obj.kind == enConst, obj.kind == enList, obj.kind == enDict, obj.kind == enTuple,
		obj.kind == enName && obj.val == "loop":
		return x, nil
	}
	return fnDef + "(" + x + ", " + w.site(access, obj) + ")", nil
}

func (w *exprWriter) writeAll(nodes []*enode) ([]string, error) {
	out := make([]string, len(nodes))
	for i, k := range nodes {
		s, err := w.write(k)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// writeArgs writes the arguments of a call or filter (kids[1:] and kw).
func (w *exprWriter) writeArgs(n *enode) (string, error) {
	args, err := w.writeAll(n.kids[1:])
	if err != nil {
		return "", err
	}
	for _, kw := range n.kw {
		v, err := w.write(kw.val)
		if err != nil {
			return "", err
		}
		if kw.name == "**" {
			args = append(args, "**"+v)
		} else {
			args = append(args, kw.name+"="+v)
		}
	}
	return strings.Join(args, ", "), nil
}

// rewriteExprTag rewrites the inside of a {{ }} tag: the expression (a
// tuple when it has commas, as Jinja2 prints it).
func rewriteExprTag(content string, line int, sites *[]exprSite) (string, error) {
	toks, err := tokenizeExpr(content)
	if err != nil {
		return "", err
	}
	p := &exprParser{toks: toks}
	e, err := p.parseTuple(true, false)
	if err != nil {
		return "", err
	}
	if p.peek().kind != etEOF {
		return "", fmt.Errorf("unexpected %q after the expression", p.peek().val)
	}
	w := &exprWriter{src: content, line: line, sites: sites}
	return w.write(e)
}

// rewriteStatement rewrites the inside of a {% %} tag whose statement
// holds expressions (if, elif, for, set): the expressions are rewritten,
// the rest kept. ok is false for statements left as they are.
func rewriteStatement(content string, line int, sites *[]exprSite) (out string, ok bool, err error) {
	toks, err := tokenizeExpr(content)
	if err != nil || toks[0].kind != etName {
		return "", false, err
	}
	w := &exprWriter{src: content, line: line, sites: sites}
	p := &exprParser{toks: toks}
	kw := p.next().val
	expr := func(withCond bool) (string, error) {
		e, err := p.parseTuple(withCond, false)
		if err != nil {
			return "", err
		}
		return w.write(e)
	}
	var b strings.Builder
	switch kw {
	case "if", "elif":
		x, err := expr(true)
		if err != nil {
			return "", false, err
		}
		b.WriteString(kw + " " + x)
	case "set":
		// set TARGET = EXPR; the block form (no "=") is left as it is.
		i := p.pos
		for i < len(toks) && !(toks[i].kind == etOp && toks[i].val == "=") {
			if toks[i].kind == etOp && toks[i].val != "," && toks[i].val != "." {
				return "", false, nil
			}
			i++
		}
		if i >= len(toks) || toks[i].kind == etEOF {
			return "", false, nil
		}
		target := content[toks[p.pos].start:toks[i].start]
		p.pos = i + 1
		x, err := expr(true)
		if err != nil {
			return "", false, err
		}
		b.WriteString("set " + strings.TrimSpace(target) + " = " + x)
	case "for":
		i := p.pos
		for i < len(toks) && !(toks[i].kind == etName && toks[i].val == "in") {
			if toks[i].kind == etEOF || toks[i].kind == etOp && toks[i].val != "," && toks[i].val != "(" && toks[i].val != ")" {
				return "", false, nil
			}
			i++
		}
		target := content[toks[p.pos].start:toks[i].start]
		p.pos = i + 1
		iterFrom := p.pos
		e, err := p.parseTuple(false, false)
		if err != nil {
			return "", false, err
		}
		x, err := w.write(e)
		if err != nil {
			return "", false, err
		}
		loop := &enode{start: toks[0].start, end: p.toks[p.pos-1].end}
		if p.pos == iterFrom {
			return "", false, nil
		}
		b.WriteString("for " + strings.TrimSpace(target) + " in " + fnIter + "(" + fnIterable + "(" + x + ", " + w.site(loop, e) + "))")
		if p.isName("if") {
			p.next()
			c, err := p.parseExpr()
			if err != nil {
				return "", false, err
			}
			cs, err := w.write(c)
			if err != nil {
				return "", false, err
			}
			b.WriteString(" if " + cs)
		}
		if p.isName("recursive") {
			p.next()
			b.WriteString(" recursive")
		}
	default:
		return "", false, nil
	}
	if p.peek().kind != etEOF {
		return "", false, fmt.Errorf("unexpected %q in the %s statement", p.peek().val, kw)
	}
	return b.String(), true, nil
}
