package warncode

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/inferbench/inferbench/internal/testkit"
)

// A site is one warning text the repository's code produces, as its
// format renders with placeholder arguments.
type site struct {
	Pos  string // file:line
	Text string
}

// An unresolved site is an expression that flows into warnings but is
// no text the scanner can render: a warning passed on from elsewhere.
type unresolved struct {
	Pos  string
	Expr string // the file's path in the repository and the expression's source
}

// scanner finds the warning texts of the repository's non-test Go code.
// A text flows into warnings where it is
//   - appended to a slice whose name holds "warn" (Warnings,
//     DriverWarnings, warns, warnings),
//   - appended to a slice a function whose name holds "warn" returns, or
//     returned by it in a slice literal,
//   - appended, as a slice, from what a function of the repository returns
//     (its appends to the slice it returns, its slice literals),
//   - the last argument of a call of a function or method named warn,
//   - assigned to a name that holds "warn" (warn = fmt.Errorf(…)),
//   - an element of a slice literal of a Warnings field;
//
// an identifier is followed to what the function assigns to it, and a
// call to the repository's function of that name to what it returns.
type scanner struct {
	root   string
	fset   *token.FileSet
	files  map[string]*ast.File  // path → file
	values map[string]ast.Expr   // dir + "." + name → a package-level value
	funcs  map[string][]funcDecl // name → its declarations
	mod    string                // the module path
	sites  []site
	unres  []unresolved
	seen   map[string]bool
}

type funcDecl struct {
	path string
	decl *ast.FuncDecl
}

func newScanner(t *testing.T) *scanner {
	root := testkit.RepoRoot(t)
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mod := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(gomod), "\n", 2)[0], "module"))
	s := &scanner{root: root, fset: token.NewFileSet(), files: map[string]*ast.File{}, values: map[string]ast.Expr{}, funcs: map[string][]funcDecl{}, mod: mod, seen: map[string]bool{}}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" || name == "adaptertest") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(s.fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		s.files[path] = f
		dir := filepath.Dir(path)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					if vs, ok := sp.(*ast.ValueSpec); ok {
						for i, n := range vs.Names {
							if i < len(vs.Values) {
								s.values[dir+"."+n.Name] = vs.Values[i]
							}
						}
					}
				}
			case *ast.FuncDecl:
				s.funcs[d.Name.Name] = append(s.funcs[d.Name.Name], funcDecl{path, d})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var warnName = regexp.MustCompile(`(?i)warn`)

// nameOf is an expression's last name: x, a.b.x.
func nameOf(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.IndexExpr:
		return nameOf(e.X)
	}
	return ""
}

func (s *scanner) scan() {
	paths := make([]string, 0, len(s.files))
	for p := range s.files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		for _, d := range s.files[p].Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				s.scanFunc(p, fd)
			}
		}
	}
}

// makesText reports whether e makes a text: a literal, a concatenation,
// fmt.Sprintf, fmt.Errorf or errors.New.
func makesText(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return e.Kind == token.STRING
	case *ast.BinaryExpr:
		return e.Op == token.ADD
	case *ast.CallExpr:
		switch nameOf(e.Fun) {
		case "Sprintf", "Errorf", "New":
			if sel, ok := e.Fun.(*ast.SelectorExpr); ok {
				p := nameOf(sel.X)
				return p == "fmt" || p == "errors"
			}
		}
	}
	return false
}

func isAppend(e ast.Expr) (*ast.CallExpr, bool) {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return nil, false
	}
	id, ok := c.Fun.(*ast.Ident)
	return c, ok && id.Name == "append" && len(c.Args) > 0
}

func (s *scanner) scanFunc(path string, fd *ast.FuncDecl) {
	producer := warnName.MatchString(fd.Name.Name) && fd.Type.Results != nil
	returned := map[string]bool{}
	if producer {
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if r, ok := n.(*ast.ReturnStmt); ok {
				for _, e := range r.Results {
					if id, ok := e.(*ast.Ident); ok {
						returned[id.Name] = true
					}
					if cl, ok := e.(*ast.CompositeLit); ok {
						if _, ok := cl.Type.(*ast.ArrayType); ok {
							for _, el := range cl.Elts {
								s.add(path, fd, el)
							}
						}
					}
				}
			}
			return true
		})
	}
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if c, ok := isAppend(n); ok {
				dst := nameOf(c.Args[0])
				if warnName.MatchString(dst) || returned[dst] {
					s.addAppend(path, fd, c)
				} else if cl, ok := c.Args[0].(*ast.CompositeLit); ok {
					// append([]string{note}, s.Warnings...)
					if len(c.Args) > 1 && warnName.MatchString(nameOf(c.Args[len(c.Args)-1])) {
						for _, el := range cl.Elts {
							s.add(path, fd, el)
						}
					}
				}
			}
			if nameOf(n.Fun) == "warn" && len(n.Args) > 0 {
				s.add(path, fd, n.Args[len(n.Args)-1])
			}
		case *ast.AssignStmt:
			// warn = fmt.Errorf(…): a text made for a warning.
			if len(n.Lhs) == len(n.Rhs) {
				for i, l := range n.Lhs {
					if warnName.MatchString(nameOf(l)) && makesText(n.Rhs[i]) {
						s.add(path, fd, n.Rhs[i])
					}
				}
			}
		case *ast.KeyValueExpr:
			if k, ok := n.Key.(*ast.Ident); ok && warnName.MatchString(k.Name) {
				if cl, ok := n.Value.(*ast.CompositeLit); ok {
					for _, el := range cl.Elts {
						s.add(path, fd, el)
					}
				}
			}
		}
		return true
	})
}

func (s *scanner) addAppend(path string, fd *ast.FuncDecl, c *ast.CallExpr) {
	args := c.Args[1:]
	if c.Ellipsis.IsValid() {
		// A slice passed on: its texts are found where they are made,
		// or in the function that returns it.
		s.addSlice(path, fd, args[len(args)-1])
		return
	}
	for _, a := range args {
		s.add(path, fd, a)
	}
}

// addSlice records the texts of a slice of warnings a function of the
// repository returns, as the call e or an identifier fd assigns from
// one: what its body appends to the slice it returns there, and the
// elements of a slice literal it returns.
func (s *scanner) addSlice(path string, fd *ast.FuncDecl, e ast.Expr) {
	var call *ast.CallExpr
	i := 0
	switch e := e.(type) {
	case *ast.CallExpr:
		call = e
	case *ast.Ident:
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			a, ok := n.(*ast.AssignStmt)
			if !ok || len(a.Rhs) != 1 {
				return true
			}
			for j, l := range a.Lhs {
				if id, isID := l.(*ast.Ident); isID && id.Name == e.Name {
					if c, isCall := a.Rhs[0].(*ast.CallExpr); isCall {
						call, i = c, j
					}
				}
			}
			return true
		})
	}
	if call == nil {
		return
	}
	for _, f := range s.callees(path, call, i) {
		var results []string // the names its results go by
		if f.decl.Type.Results != nil {
			for _, r := range f.decl.Type.Results.List {
				for _, n := range r.Names {
					results = append(results, n.Name)
				}
			}
		}
		out := map[string]bool{}
		if len(results) > i {
			out[results[i]] = true
		}
		ast.Inspect(f.decl.Body, func(n ast.Node) bool {
			if r, ok := n.(*ast.ReturnStmt); ok && len(r.Results) > i {
				switch x := r.Results[i].(type) {
				case *ast.Ident:
					out[x.Name] = true
				case *ast.CompositeLit:
					for _, el := range x.Elts {
						s.add(f.path, f.decl, el)
					}
				}
			}
			return true
		})
		ast.Inspect(f.decl.Body, func(n ast.Node) bool {
			if e, ok := n.(ast.Expr); ok {
				if c, ok := isAppend(e); ok && out[nameOf(c.Args[0])] && !warnName.MatchString(nameOf(c.Args[0])) {
					s.addAppend(f.path, f.decl, c)
				}
			}
			return true
		})
	}
}

// callees are the repository's functions call may call that return at
// least i+1 results: a function of path's package for a plain name, any
// of that name for a method or another package's.
func (s *scanner) callees(path string, call *ast.CallExpr, i int) []funcDecl {
	fs := s.funcs[nameOf(call.Fun)]
	if _, local := call.Fun.(*ast.Ident); local {
		fs = slices.DeleteFunc(slices.Clone(fs), func(f funcDecl) bool { return filepath.Dir(f.path) != filepath.Dir(path) || f.decl.Recv != nil })
	}
	return slices.DeleteFunc(slices.Clone(fs), func(f funcDecl) bool {
		return f.decl.Body == nil || f.decl.Type.Results == nil || f.decl.Type.Results.NumFields() <= i || !takes(f.decl, len(call.Args))
	})
}

// add records the texts e may be.
func (s *scanner) add(path string, fd *ast.FuncDecl, e ast.Expr) {
	texts, ok := s.resolve(path, fd, e, 0)
	pos := s.fset.Position(e.Pos())
	at := filepath.ToSlash(strings.TrimPrefix(pos.Filename, s.root+string(filepath.Separator))) + ":" + strconv.Itoa(pos.Line)
	if !ok {
		key := at[:strings.LastIndex(at, ":")] + ": " + s.src(e)
		if !s.seen["u"+key] {
			s.seen["u"+key] = true
			s.unres = append(s.unres, unresolved{Pos: at, Expr: key})
		}
		return
	}
	for _, t := range texts {
		if t == "" || s.seen["s"+t] {
			continue
		}
		s.seen["s"+t] = true
		s.sites = append(s.sites, site{Pos: at, Text: t})
	}
}

func (s *scanner) src(e ast.Expr) string {
	p, q := s.fset.Position(e.Pos()), s.fset.Position(e.End())
	b, err := os.ReadFile(p.Filename)
	if err != nil || q.Offset > len(b) {
		return "?"
	}
	return strings.Join(strings.Fields(string(b[p.Offset:q.Offset])), " ")
}

// resolve gives the texts e may be; ok is false where it cannot tell.
func (s *scanner) resolve(path string, fd *ast.FuncDecl, e ast.Expr, depth int) (texts []string, ok bool) {
	if depth > 6 {
		return nil, false
	}
	switch e := e.(type) {
	case *ast.ParenExpr:
		return s.resolve(path, fd, e.X, depth)
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			v, err := strconv.Unquote(e.Value)
			return []string{v}, err == nil
		}
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return nil, false
		}
		l, lok := s.resolveOrPlaceholder(path, fd, e.X, depth)
		r, rok := s.resolveOrPlaceholder(path, fd, e.Y, depth)
		if !lok && !rok {
			return nil, false
		}
		var out []string
		for _, a := range l {
			for _, b := range r {
				out = append(out, a+b)
			}
		}
		return out, true
	case *ast.Ident:
		if v, ok := s.values[filepath.Dir(path)+"."+e.Name]; ok {
			return s.resolve(path, nil, v, depth+1)
		}
		if fd == nil {
			return nil, false
		}
		return s.resolveLocal(path, fd, e.Name, depth)
	case *ast.SelectorExpr:
		if dir, ok := s.importDir(path, e.X); ok {
			if v, ok := s.values[dir+"."+e.Sel.Name]; ok {
				return s.resolve(filepath.Join(dir, "x.go"), nil, v, depth+1)
			}
		}
		return nil, false
	case *ast.CallExpr:
		fn := nameOf(e.Fun)
		pkg := ""
		if sel, ok := e.Fun.(*ast.SelectorExpr); ok {
			pkg = nameOf(sel.X)
		}
		switch {
		case pkg == "fmt" && (fn == "Sprintf" || fn == "Errorf") && len(e.Args) > 0:
			formats, ok := s.resolve(path, fd, e.Args[0], depth+1)
			if !ok {
				return nil, false
			}
			var out []string
			for _, f := range formats {
				out = append(out, s.render(path, f, e.Args[1:], depth))
			}
			return out, true
		case pkg == "errors" && fn == "New" && len(e.Args) == 1:
			return s.resolve(path, fd, e.Args[0], depth+1)
		case fn == "Error" || fn == "String":
			return nil, false
		}
		return s.returns(path, e, 0, depth)
	}
	return nil, false
}

func (s *scanner) resolveOrPlaceholder(path string, fd *ast.FuncDecl, e ast.Expr, depth int) ([]string, bool) {
	if t, ok := s.resolve(path, fd, e, depth+1); ok {
		return t, true
	}
	return []string{hole}, false
}

// hole marks a placeholder of a rendered text: where a server's or a
// file's text may stand.
const hole = "\x00"

// importDir is the directory of the package x names in path's file.
func (s *scanner) importDir(path string, x ast.Expr) (string, bool) {
	id, ok := x.(*ast.Ident)
	if !ok {
		return "", false
	}
	for _, im := range s.files[path].Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if !strings.HasPrefix(p, s.mod+"/") {
			continue
		}
		name := filepath.Base(p)
		if im.Name != nil {
			name = im.Name.Name
		}
		if name == id.Name {
			return filepath.Join(s.root, filepath.FromSlash(strings.TrimPrefix(p, s.mod+"/"))), true
		}
	}
	return "", false
}

// resolveLocal gives what fd assigns to name; a parameter is passed on.
func (s *scanner) resolveLocal(path string, fd *ast.FuncDecl, name string, depth int) ([]string, bool) {
	param := false
	ast.Inspect(fd, func(n ast.Node) bool {
		var ft *ast.FuncType
		switch n := n.(type) {
		case *ast.FuncDecl:
			ft = n.Type
		case *ast.FuncLit:
			ft = n.Type
		}
		if ft != nil {
			for _, f := range ft.Params.List {
				for _, id := range f.Names {
					param = param || id.Name == name
				}
			}
		}
		return true
	})
	if param {
		return nil, false
	}
	var out []string
	found, ok := false, true
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if id, isID := l.(*ast.Ident); !isID || id.Name != name {
					continue
				}
				found = true
				var t []string
				var tok bool
				switch {
				case len(n.Rhs) == len(n.Lhs):
					if _, isApp := isAppend(n.Rhs[i]); isApp {
						continue
					}
					t, tok = s.resolve(path, fd, n.Rhs[i], depth+1)
				case len(n.Rhs) == 1:
					if c, isCall := n.Rhs[0].(*ast.CallExpr); isCall {
						t, tok = s.returns(path, c, i, depth+1)
					}
				}
				if !tok {
					ok = false
				}
				out = append(out, t...)
			}
		case *ast.RangeStmt:
			if id, isID := n.Value.(*ast.Ident); isID && id.Name == name {
				found, ok = true, false
			}
		}
		return true
	})
	return out, found && ok
}

// returns gives what the repository's functions named as call return at
// index i.
func (s *scanner) returns(path string, call *ast.CallExpr, i, depth int) ([]string, bool) {
	fs := s.callees(path, call, i)
	if len(fs) == 0 || depth > 6 {
		return nil, false
	}
	var out []string
	found := false
	for _, f := range fs {
		ok := true
		ast.Inspect(f.decl.Body, func(n ast.Node) bool {
			if _, isLit := n.(*ast.FuncLit); isLit {
				return false
			}
			r, isRet := n.(*ast.ReturnStmt)
			if !isRet || len(r.Results) <= i {
				return true
			}
			found = true
			t, tok := s.resolve(f.path, f.decl, r.Results[i], depth+1)
			if !tok {
				if id, isID := r.Results[i].(*ast.Ident); isID && id.Name == "nil" {
					return true
				}
				ok = false
			}
			out = append(out, t...)
			return true
		})
		if !ok {
			return nil, false
		}
	}
	return out, found
}

// takes reports whether fd takes n arguments.
func takes(fd *ast.FuncDecl, n int) bool {
	params, variadic := 0, false
	for _, f := range fd.Type.Params.List {
		k := max(len(f.Names), 1)
		params += k
		if _, ok := f.Type.(*ast.Ellipsis); ok {
			variadic = true
		}
	}
	return n == params || variadic && n >= params-1
}

var verb = regexp.MustCompile(`%[-+# 0]*[0-9]*(\.[0-9]*)?[a-zA-Z%]`)

// render fills format's verbs: numbers 7 or 1.5, strings x, and an
// argument the scanner can resolve (a sentinel error, a constant) its text.
func (s *scanner) render(path, format string, args []ast.Expr, depth int) string {
	i := 0
	return verb.ReplaceAllStringFunc(format, func(v string) string {
		c := v[len(v)-1]
		if c == '%' {
			return "%"
		}
		var arg ast.Expr
		if i < len(args) {
			arg = args[i]
		}
		i++
		switch c {
		case 'd', 'x', 'X', 'o', 'b', 'c':
			return "7"
		case 'g', 'G', 'f', 'F', 'e', 'E':
			return "1.5"
		case 'T':
			return "*x.T"
		}
		if arg != nil {
			switch arg.(type) {
			case *ast.Ident, *ast.SelectorExpr, *ast.BasicLit:
				if t, ok := s.resolve(path, nil, arg, depth+1); ok && len(t) == 1 {
					if c == 'q' {
						return strconv.Quote(t[0])
					}
					return t[0]
				}
			}
		}
		if c == 'q' {
			return `"` + hole + `"`
		}
		return hole
	})
}

// passedOn are the expressions that flow into warnings without being a
// text of their own: a warning made elsewhere and passed on, named by
// file and source. The test fails on one not listed here, so that a new
// way of making warnings is looked at, and on an entry no longer found.
var passedOn = map[string]string{
	"benchkit/build.go: w.Error()":                                          "an engine's warning, made in engine/…",
	"benchkit/build.go: err.Error()":                                        "a trace's error, made in timing",
	"benchkit/build.go: Warning{Code: code, Message: msg}":                  "a request's warning: the message is its caller's",
	"benchkit/exo.go: w":                                                    "a Runner's warnings, made in runner.go",
	"benchkit/exo.go: w.Error()":                                            "an energy recording's, made in energy/sampler.go",
	"benchkit/load.go: r.thinkWarning":                                      "thinkingBuilder's, made in thinking.go",
	"benchkit/load.go: w.Error()":                                           "the dispatch's, made in concurrency",
	"benchkit/report/page.go: warning{Code: code, Text: t, Advice: advice}": "the page's warnings, classified here",
	"benchkit/report/qwen.go: w":                                            "each scale's run warnings (LoadMeta.Warnings), made in benchkit",
	"benchkit/runner.go: w.Error()":                                         "a Plan's warnings, made in plan.go",
	"benchkit/summary.go: w.Message":                                        "a request's warning, made in build.go or an engine",
	"benchkit/summary.go: m":                                                "a burst's warnings, made in timing/burst.go",
	"concurrency/result.go: err":                                            "the scheduler's, made in arrivals.go",
	"engine/exo/complete.go: err":                                           "parsePrefillProgress's error (exo_prefill_progress)",
	"engine/metrics/delta.go: Warning{Family: name, Reason: \"present before, absent after: a restart, or another server\"}": "a refused figure, shown as server figure refused: …",
	"engine/metrics/delta.go: Warning{Family: name, Reason: reason}":                                                         "a refused figure, shown as server figure refused: …",
	"examples/multi-turn/run.go: note": "WorkloadFlags.Skipped (trace_rows_skipped), built with a strings.Builder; TestClassify holds its text",
	"examples/offline/run.go: note":    "WorkloadFlags.Skipped (trace_rows_skipped)",
	"examples/serve-load/run.go: note": "WorkloadFlags.Skipped (trace_rows_skipped)",
	"examples/offline/count.go: benchkit.Warning{Code: benchkit.WarnShortGeneration, Message: fmt.Sprintf(\"%d tokens generated, %d asked for\", n, r.TGTarget)}":                                          "a request's coded warning, counted in the summary's",
	"examples/offline/count.go: benchkit.Warning{Code: benchkit.WarnClientCounted, Message: fmt.Sprintf(\"%s: the reply carried no usage; %d tokens counted in its text by %s\", warnCounted, n, source)}": "a request's coded warning, counted in the summary's",
	"timing/rates.go: err": "the warn closure's parameter: its callers' texts are sites",
}

// carriers are the rendered texts of warnings that only carry another
// (their kind is the carried one's).
var carriers = map[string]bool{
	"A: " + hole:             true,
	"B: " + hole:             true,
	hole + ": " + hole:       true, // a phase's
	hole + "'s run: " + hole: true, // a side's run, on the comparison page
	"planning: " + hole:      true,
	"planning the " + hole + " placement: " + hole: true,
}

var (
	scanOnce sync.Once
	theScan  *scanner
)

// scanned is the repository's scan, made once for the package's tests.
func scanned(t *testing.T) *scanner {
	t.Helper()
	scanOnce.Do(func() {
		s := newScanner(t)
		s.scan()
		theScan = s
	})
	if theScan == nil {
		t.Fatal("the scan failed")
	}
	if n := len(theScan.sites); n < 100 {
		t.Fatalf("the scan found %d warning texts, want at least 100: the scanner lost its way", n)
	}
	return theScan
}

// TestEveryWarningHasAKind reads the repository's non-test code for the
// warnings it writes, renders each with placeholder arguments, and
// requires a kind for it: a new warning without a phrase in catalogue.go
// fails here.
func TestEveryWarningHasAKind(t *testing.T) {
	s := scanned(t)
	if os.Getenv("WARNCODE_DUMP") != "" {
		for _, x := range s.sites {
			text := strings.ReplaceAll(x.Text, hole, "x")
			t.Logf("%s\t%s\t%s", x.Pos, Classify(text).Code, text)
		}
	}
	for _, x := range s.sites {
		if carriers[x.Text] {
			continue
		}
		text := strings.ReplaceAll(x.Text, hole, "x")
		if k := Classify(text); k.Code == Other {
			t.Errorf("%s: %q has no kind: add its leading phrase to catalogue.go and its code to docs/WARNINGS.md", x.Pos, text)
		}
	}
	found := map[string]bool{}
	for _, u := range s.unres {
		found[u.Expr] = true
		if _, ok := passedOn[u.Expr]; !ok {
			t.Errorf("%s: %s flows into warnings and is no text the scan can read: give it a kind, or list it in passedOn with where its text is made", u.Pos, u.Expr)
		}
	}
	for e := range passedOn {
		if !found[e] {
			t.Errorf("passedOn lists %s, which the scan no longer finds", e)
		}
	}
}

// TestPlaceholdersPickNoCode puts hostile texts (a text of every kind,
// markup) in each placeholder of every warning: its kind stays
// its own, or becomes Other, never another's.
func TestPlaceholdersPickNoCode(t *testing.T) {
	s := scanned(t)
	hostile := []string{"<script>alert(1)</script>", "", "x: y", "\n", "A: B: x"}
	kinds := map[string]bool{}
	for _, x := range s.sites {
		// One text of each kind: another kind's leading words.
		text := strings.ReplaceAll(x.Text, hole, "x")
		if c := Classify(text).Code; !kinds[c] {
			kinds[c] = true
			hostile = append(hostile, text)
		}
	}
	for _, x := range s.sites {
		if carriers[x.Text] || !strings.Contains(x.Text, hole) {
			continue
		}
		want := Classify(strings.ReplaceAll(x.Text, hole, "x")).Code
		parts := strings.Split(x.Text, hole)
		for i := 1; i < len(parts); i++ {
			for _, h := range hostile {
				var b strings.Builder
				for j, p := range parts {
					if j > 0 {
						if j == i {
							b.WriteString(h)
						} else {
							b.WriteString("x")
						}
					}
					b.WriteString(p)
				}
				if got := Classify(b.String()).Code; got != want && got != Other {
					t.Errorf("%s: a placeholder holding %q makes %q %s, want %s or %s", x.Pos, h, b.String(), got, want, Other)
				}
			}
		}
	}
}
