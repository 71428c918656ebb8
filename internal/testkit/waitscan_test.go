package testkit

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// escape is the comment that marks a wait as bounded by something the
// scan cannot see; the reason follows it.
const escape = "// bounded:"

// helperPackages are the packages that only tests import, whose every
// file is scanned as a test file is.
var helperPackages = map[string]bool{"internal/progtest": true, "internal/testkit": true, "internal/browser/browsertest": true}

// TestTestWaitsBounded scans every *_test.go file of the module (and the
// files of helperPackages) for a wait
// with no bound, the kind that hung a suite for 19 minutes when a test's
// premise did not hold on a slow machine:
//
//   - a channel receive outside a select, unless from time.After,
//     time.Tick, a timer's or ticker's C, or a context's Done();
//   - a send on a channel the file makes unbuffered, outside a select;
//   - a select with no default and no case of that kind;
//   - a Wait() call (sync.WaitGroup, sync.Cond, exec.Cmd), unless on a
//     command made by exec.CommandContext or Command;
//   - exec.Command: a process a test starts gets a deadline
//     (exec.CommandContext, or Command);
//   - http.Get, http.Post, http.Head, http.PostForm and
//     http.DefaultClient: the default client never gives up on a server
//     that stops answering.
//
// Waits on a goroutine the test starts (the body of a go statement) block
// only that goroutine: whoever waits for it is checked. A function given
// to DoneWithin is bounded by it. A wait bounded in a way the scan cannot
// see says why with a "// bounded: reason" comment on its line or the line
// above. The scan is syntactic: a range over a channel and a read from a
// pipe or a connection are not found; bound those too (a context, a read
// deadline).
func TestTestWaitsBounded(t *testing.T) {
	root := RepoRoot(t)
	var findings []string
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // another module
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if !strings.HasSuffix(path, "_test.go") && !(strings.HasSuffix(path, ".go") && helperPackages[filepath.ToSlash(filepath.Dir(rel))]) {
			return nil
		}
		files++
		found, err := scanFile(path)
		if err != nil {
			return err
		}
		for _, f := range found {
			findings = append(findings, rel+":"+f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("scanned %d test files under %s, want the module's (over 100)", files, root)
	}
	sort.Strings(findings)
	for _, f := range findings {
		t.Error(f)
	}
	if len(findings) > 0 {
		t.Logf("%d unbounded waits in %d test files: bound each (RecvWithin, WaitWithin, DoneWithin, a select with a timer, "+
			"exec.CommandContext, a client with a Timeout), or say on its line why it is bounded (%s reason)", len(findings), files, escape)
	} else {
		t.Logf("%d test files, no unbounded wait", files)
	}
}

// TestScanFindsUnboundedWaits runs the scan on a file with one wait of
// each kind, bounded and not.
func TestScanFindsUnboundedWaits(t *testing.T) {
	src := `package p

func f(ctx context.Context, ch chan int, wg *sync.WaitGroup, t *testing.T) {
	<-ch                         // line 4: found
	v := <-ch                    // line 5: found
	<-time.After(time.Second)    // a sleep
	<-ctx.Done()
	timer := time.NewTimer(time.Second)
	<-timer.C
	select { // line 10: found
	case <-ch:
	case v = <-ch:
	}
	select {
	case <-ch:
	case <-time.After(time.Second):
	}
	deadline := time.After(time.Second)
	select {
	case <-ch:
	case <-deadline:
	}
	select {
	case <-ch:
	default:
	}
	wg.Wait() // line 27: found
	// bounded: every goroutine has returned by now
	wg.Wait()
	wg.Wait() // bounded: so too here
	go func() { <-ch; wg.Wait() }()
	DoneWithin(t, time.Second, "wait", func() { wg.Wait() })
	testkit.DoneWithin(t, time.Second, "wait", func() { <-ch })
	cmd := exec.Command("go", "version") // line 34: found
	_ = cmd.Wait()                       // line 35: found
	bounded := exec.CommandContext(ctx, "go", "version")
	_ = bounded.Wait()
	other := testkit.Command(t, time.Second, "go", "version")
	_ = other.Wait()
	http.Get("http://x")                            // line 40: found
	http.DefaultClient.Do(nil)                      // line 41: found
	(&http.Client{Timeout: time.Second}).Get("http://x")
	f := func() { <-ch } // line 43: found (a handler, say, is not a go statement)
	_ = v
	_ = f
	// bounded:
	<-ch // line 47: found, the escape gives no reason
	unbuf, buf := make(chan int), make(chan int, 1)
	unbuf <- 1 // line 49: found
	buf <- 1
	ch <- 1 // made elsewhere: not known to block
	c := &clock{tick: make(chan int)}
	c.tick <- 1 // line 53: found
	select {
	case unbuf <- 1:
	case <-time.After(time.Second):
	}
}
`
	path := filepath.Join(t.TempDir(), "x_test.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	found, err := scanFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range found {
		lines = append(lines, f[:strings.Index(f, ":")])
	}
	want := []string{"4", "5", "10", "27", "34", "35", "40", "41", "43", "47", "49", "53"}
	if strings.Join(lines, ",") != strings.Join(want, ",") {
		t.Errorf("findings on lines %v, want %v:\n%s", lines, want, strings.Join(found, "\n"))
	}
}

// scanFile returns "line: what" for each unbounded wait in the file.
func scanFile(path string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	s := &scan{fset: fset, escaped: escapedLines(fset, f), timers: map[string]bool{}, contextCmds: map[string]bool{}, chanCap: map[string]int{}}
	// Names bound anywhere in the file to a bound channel or a command
	// with a deadline (the scan does not resolve scopes: a name is one
	// thing throughout a test file, near enough).
	ast.Inspect(f, s.collectNames)
	s.walk(f)
	sort.SliceStable(s.found, func(i, j int) bool { return s.found[i].line < s.found[j].line })
	out := make([]string, len(s.found))
	for i, fd := range s.found {
		out[i] = fmt.Sprintf("%d: %s", fd.line, fd.what)
	}
	return out, nil
}

type finding struct {
	line int
	what string
}

type scan struct {
	fset        *token.FileSet
	escaped     map[int]bool
	timers      map[string]bool // names bound to time.After, a timer's C, a Done()
	contextCmds map[string]bool // names bound to exec.CommandContext or Command
	chanCap     map[string]int  // 1: names (variables, fields) bound only to unbuffered channels; 2: also to others
	found       []finding
}

// escapedLines returns the lines an escape comment with a reason covers:
// its own and the next.
func escapedLines(fset *token.FileSet, f *ast.File) map[int]bool {
	lines := map[int]bool{}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if reason, ok := strings.CutPrefix(c.Text, escape); ok && strings.TrimSpace(reason) != "" {
				line := fset.Position(c.Pos()).Line
				lines[line], lines[line+1] = true, true
			}
		}
	}
	return lines
}

func (s *scan) report(n ast.Node, format string, args ...any) {
	line := s.fset.Position(n.Pos()).Line
	if !s.escaped[line] {
		s.found = append(s.found, finding{line, fmt.Sprintf(format, args...)})
	}
}

func (s *scan) collectNames(n ast.Node) bool {
	var lhs []ast.Expr
	var rhs []ast.Expr
	switch n := n.(type) {
	case *ast.KeyValueExpr: // a field of a composite literal
		lhs, rhs = []ast.Expr{n.Key}, []ast.Expr{n.Value}
	case *ast.AssignStmt:
		lhs, rhs = n.Lhs, n.Rhs
	case *ast.ValueSpec:
		for _, name := range n.Names {
			lhs = append(lhs, name)
		}
		rhs = n.Values
	default:
		return true
	}
	if len(lhs) != len(rhs) {
		return true
	}
	for i, l := range lhs {
		var name *ast.Ident
		switch l := l.(type) {
		case *ast.Ident:
			name = l
		case *ast.SelectorExpr:
			name = l.Sel
		default:
			continue
		}
		if call, ok := rhs[i].(*ast.CallExpr); ok {
			if fn, ok := call.Fun.(*ast.Ident); ok && fn.Name == "make" && len(call.Args) > 0 {
				if _, ok := call.Args[0].(*ast.ChanType); ok {
					unbuffered := len(call.Args) == 1
					if lit, ok := call.Args[len(call.Args)-1].(*ast.BasicLit); ok && lit.Value == "0" {
						unbuffered = true
					}
					if unbuffered && s.chanCap[name.Name] == 0 {
						s.chanCap[name.Name] = 1
					} else if !unbuffered {
						s.chanCap[name.Name] = 2
					}
				}
			}
		}
		switch {
		case s.boundChan(rhs[i]):
			s.timers[name.Name] = true
		case isCall(rhs[i], "exec", "CommandContext") || isCall(rhs[i], "testkit", "Command") || isCall(rhs[i], "", "Command"):
			s.contextCmds[name.Name] = true
		}
	}
	return true
}

// boundChan reports whether receiving from e ends by itself (a timer) or
// with a context.
func (s *scan) boundChan(e ast.Expr) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.CallExpr:
		if isCall(e, "time", "After") || isCall(e, "time", "Tick") {
			return true
		}
		if sel, ok := e.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Done" && len(e.Args) == 0 {
			return true
		}
	case *ast.SelectorExpr:
		return e.Sel.Name == "C"
	case *ast.Ident:
		return s.timers[e.Name]
	}
	return false
}

// isCall reports whether e calls pkg.name (pkg "" means a plain name).
func isCall(e ast.Expr, pkg, name string) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return false
	}
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		return pkg == "" && fn.Name == name
	case *ast.SelectorExpr:
		x, ok := fn.X.(*ast.Ident)
		return ok && pkg != "" && x.Name == pkg && fn.Sel.Name == name
	}
	return false
}

// walk visits n's subtree; a receive that is a select's case is checked
// with its select, and the body of a go statement or of a function given
// to DoneWithin is not checked.
func (s *scan) walk(n ast.Node) {
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			return false
		case *ast.CallExpr:
			if isCall(n, "testkit", "DoneWithin") || isCall(n, "", "DoneWithin") {
				return false
			}
			s.call(n)
		case *ast.SelectStmt:
			s.selectStmt(n)
			return false
		case *ast.UnaryExpr:
			if n.Op == token.ARROW && !s.boundChan(n.X) {
				s.report(n, "a receive with no bound (RecvWithin, or a select with a timer)")
			}
		case *ast.SendStmt:
			if name := chanName(n.Chan); name != "" && s.chanCap[name] == 1 {
				s.report(n, "a send on an unbuffered channel with no bound (SendWithin, or a select with a timer)")
			}
		}
		return true
	})
}

func (s *scan) selectStmt(sel *ast.SelectStmt) {
	bounded := false
	for _, st := range sel.Body.List {
		cc := st.(*ast.CommClause)
		if cc.Comm == nil { // default
			bounded = true
			continue
		}
		if ch, ok := recvChan(cc.Comm); ok {
			if s.boundChan(ch) {
				bounded = true
			}
			s.walk(ch) // what the channel expression itself calls
		} else if send, ok := cc.Comm.(*ast.SendStmt); ok {
			s.walk(send.Chan) // a send: its operands
			s.walk(send.Value)
		}
	}
	if !bounded {
		s.report(sel, "a select with no timer, context or default case")
	}
	for _, st := range sel.Body.List {
		for _, b := range st.(*ast.CommClause).Body {
			s.walk(b)
		}
	}
}

// chanName returns the name a channel expression ends in: a variable's or
// a field's.
func chanName(e ast.Expr) string {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// recvChan returns the channel a select case receives from.
func recvChan(comm ast.Stmt) (ast.Expr, bool) {
	var e ast.Expr
	switch c := comm.(type) {
	case *ast.ExprStmt:
		e = c.X
	case *ast.AssignStmt:
		if len(c.Rhs) == 1 {
			e = c.Rhs[0]
		}
	}
	if u, ok := ast.Unparen(e).(*ast.UnaryExpr); ok && u.Op == token.ARROW {
		return u.X, true
	}
	return nil, false
}

func (s *scan) call(call *ast.CallExpr) {
	switch {
	case isCall(call, "exec", "Command"):
		s.report(call, "exec.Command: a process with no deadline (exec.CommandContext, or testkit.Command)")
		return
	case isCall(call, "http", "Get") || isCall(call, "http", "Post") || isCall(call, "http", "Head") || isCall(call, "http", "PostForm"):
		s.report(call, "the default HTTP client has no timeout (a client with a Timeout, or a request with a deadline)")
		return
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return
	}
	if x, ok := sel.X.(*ast.SelectorExpr); ok && x.Sel.Name == "DefaultClient" {
		if pkg, ok := x.X.(*ast.Ident); ok && pkg.Name == "http" {
			s.report(call, "http.DefaultClient has no timeout (a client with a Timeout, or a request with a deadline)")
			return
		}
	}
	if sel.Sel.Name == "Wait" && len(call.Args) == 0 {
		if id, ok := sel.X.(*ast.Ident); ok && s.contextCmds[id.Name] {
			return
		}
		s.report(call, "a Wait() with no bound (WaitWithin, DoneWithin, a command with a deadline)")
	}
}
