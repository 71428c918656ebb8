package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
)

// The repository's Dockerfile and Indexed Job manifest, checked here
// because no container tool runs in the tests: the Dockerfile must build
// the packages it names with the Go of go.mod and put the entrypoint
// where the manifest runs it, and every pod's command line must parse as
// serve-load's flags, as the segment of its index.

// dockerInstr is one Dockerfile instruction.
type dockerInstr struct {
	cmd, args string
	line      int
}

// parseDockerfile splits a Dockerfile into instructions, joining
// continuation lines and dropping comments.
func parseDockerfile(t *testing.T, src string) []dockerInstr {
	t.Helper()
	var out []dockerInstr
	var cur strings.Builder
	start := 0
	for i, raw := range strings.Split(src, "\n") {
		line := strings.TrimSpace(raw)
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		cont := strings.HasSuffix(line, "\\")
		cur.WriteString(strings.TrimSuffix(line, "\\"))
		if cont {
			cur.WriteString(" ")
			continue
		}
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, dockerInstr{strings.ToUpper(cmd), strings.TrimSpace(args), start})
		cur.Reset()
	}
	if cur.Len() > 0 {
		t.Fatalf("Dockerfile ends inside a continued instruction (line %d)", start)
	}
	return out
}

// TestDockerfile checks the Dockerfile: a Go base image at least as new as
// go.mod's go line, a static build of packages main that exist, stages
// named before use, the binaries copied from the build, a non-root user
// and the entrypoint one of those binaries. It returns nothing; the
// manifest test reads the entrypoint again.
func TestDockerfile(t *testing.T) {
	entry, _ := dockerEntrypoint(t)
	if entry != "/usr/local/bin/serve-load" {
		t.Errorf("ENTRYPOINT %q; want /usr/local/bin/serve-load", entry)
	}
}

// dockerEntrypoint checks the Dockerfile and returns its entrypoint and
// the image tag its header builds.
func dockerEntrypoint(t *testing.T) (string, string) {
	t.Helper()
	root := filepath.Join("..", "..")
	src, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindSubmatch(gomod)
	if goLine == nil {
		t.Fatal("go.mod has no go line")
	}
	wantMajor, _ := strconv.Atoi(string(goLine[1]))
	wantMinor, _ := strconv.Atoi(string(goLine[2]))

	stages := map[string]bool{}
	built := map[string]bool{}  // binaries in the build stage's output
	copied := map[string]bool{} // paths in the final stage
	var user, entry string
	for i, in := range parseDockerfile(t, string(src)) {
		switch in.cmd {
		case "FROM":
			f := strings.Fields(in.args)
			if i == 0 {
				m := regexp.MustCompile(`^golang:(\d+)\.(\d+)`).FindStringSubmatch(f[0])
				if m == nil {
					t.Fatalf("line %d: the first stage is %q; want golang:<version>", in.line, f[0])
				}
				major, _ := strconv.Atoi(m[1])
				minor, _ := strconv.Atoi(m[2])
				if major < wantMajor || major == wantMajor && minor < wantMinor {
					t.Errorf("line %d: %s is older than go.mod's go %s.%s", in.line, f[0], goLine[1], goLine[2])
				}
			}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				stages[f[2]] = true
			}
		case "RUN":
			if !strings.Contains(in.args, "go build") {
				continue
			}
			if !strings.Contains(in.args, "CGO_ENABLED=0") {
				t.Errorf("line %d: the build is not static (CGO_ENABLED=0): %s", in.line, in.args)
			}
			f := strings.Fields(in.args)
			out := ""
			for j, a := range f {
				if a == "-o" && j+1 < len(f) {
					out = f[j+1]
				}
				if !strings.HasPrefix(a, "./") {
					continue
				}
				dir := filepath.Join(root, filepath.FromSlash(a))
				if !isMainPackage(t, dir) {
					t.Errorf("line %d: %s is not a package main of the repository", in.line, a)
				}
				built[strings.TrimSuffix(out, "/")+"/"+filepath.Base(a)] = true
			}
		case "COPY":
			f := strings.Fields(in.args)
			if len(f) == 3 && strings.HasPrefix(f[0], "--from=") {
				if from := strings.TrimPrefix(f[0], "--from="); !stages[from] {
					t.Errorf("line %d: COPY from stage %q, which no FROM names before", in.line, from)
				}
				if !built[f[1]] {
					t.Errorf("line %d: copies %s, which the build does not write (it writes %v)", in.line, f[1], built)
				}
				copied[f[2]] = true
			}
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			var argv []string
			if err := json.Unmarshal([]byte(in.args), &argv); err != nil || len(argv) == 0 {
				t.Fatalf("line %d: ENTRYPOINT %s is not an exec-form JSON array", in.line, in.args)
			}
			entry = argv[0]
		}
	}
	if u, _, _ := strings.Cut(user, ":"); u == "" || u == "root" || u == "0" {
		t.Errorf("the image runs as %q; want a non-root USER", user)
	}
	if !copied[entry] {
		t.Errorf("ENTRYPOINT %q is not a binary the image copies (%v)", entry, copied)
	}
	tag := regexp.MustCompile(`docker build -t (\S+) \.`).FindSubmatch(src)
	if tag == nil {
		t.Fatal("the Dockerfile's header does not say how to build it (docker build -t TAG .)")
	}
	return entry, string(tag[1])
}

func isMainPackage(t *testing.T, dir string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && regexp.MustCompile(`(?m)^package main$`).Match(b) {
			return true
		}
	}
	return false
}

// yamlLine is one significant line of a YAML file.
type yamlLine struct {
	indent int
	text   string
	n      int
}

// yamlReader reads the block-style subset of YAML the manifest is written
// in: mappings, sequences (of scalars or of mappings), plain and quoted
// scalars, full-line comments. Anything else (flow collections, anchors,
// multi-line scalars, tabs) is an error, so the manifest stays simple.
type yamlReader struct {
	ls []yamlLine
	i  int
}

var yamlKey = regexp.MustCompile(`^[A-Za-z0-9_./-]+$`)

func parseYAML(src string) (any, error) {
	r := &yamlReader{}
	for i, raw := range strings.Split(src, "\n") {
		line := strings.TrimRight(raw, " \r")
		text := strings.TrimLeft(line, " ")
		if text == "" || strings.HasPrefix(text, "#") || text == "---" {
			continue
		}
		if strings.ContainsAny(line, "\t") {
			return nil, fmt.Errorf("line %d: a tab", i+1)
		}
		for _, bad := range []string{"{", "[", "&", "*", "|", ">", " #"} {
			if strings.HasPrefix(text, bad) || strings.Contains(text, ": "+bad) || bad == " #" && strings.Contains(text, bad) && !strings.ContainsAny(text, `"'`) {
				return nil, fmt.Errorf("line %d: %q is outside the subset this reader knows", i+1, text)
			}
		}
		r.ls = append(r.ls, yamlLine{len(line) - len(text), text, i + 1})
	}
	if len(r.ls) == 0 {
		return nil, fmt.Errorf("empty")
	}
	v, err := r.block(r.ls[0].indent)
	if err == nil && r.i < len(r.ls) {
		err = fmt.Errorf("line %d: unexpected indentation", r.ls[r.i].n)
	}
	return v, err
}

func isItem(s string) bool { return s == "-" || strings.HasPrefix(s, "- ") }

func (r *yamlReader) block(indent int) (any, error) {
	if isItem(r.ls[r.i].text) {
		return r.seq(indent)
	}
	return r.mapping(indent)
}

func (r *yamlReader) seq(indent int) ([]any, error) {
	var out []any
	for r.i < len(r.ls) && r.ls[r.i].indent == indent && isItem(r.ls[r.i].text) {
		l := r.ls[r.i]
		item := strings.TrimSpace(strings.TrimPrefix(l.text, "-"))
		if item == "" {
			return nil, fmt.Errorf("line %d: an empty item", l.n)
		}
		if _, _, ok := yamlKeyValue(item); ok {
			r.ls[r.i] = yamlLine{indent + 2, item, l.n} // its first key
			m, err := r.mapping(indent + 2)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
			continue
		}
		s, err := yamlScalar(item, l.n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		r.i++
	}
	return out, nil
}

func (r *yamlReader) mapping(indent int) (map[string]any, error) {
	m := map[string]any{}
	for r.i < len(r.ls) && r.ls[r.i].indent == indent && !isItem(r.ls[r.i].text) {
		l := r.ls[r.i]
		k, v, ok := yamlKeyValue(l.text)
		if !ok {
			return nil, fmt.Errorf("line %d: %q is not key: value", l.n, l.text)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("line %d: key %q twice", l.n, k)
		}
		r.i++
		if v != "" {
			s, err := yamlScalar(v, l.n)
			if err != nil {
				return nil, err
			}
			m[k] = s
			continue
		}
		if r.i < len(r.ls) && (r.ls[r.i].indent > indent || r.ls[r.i].indent == indent && isItem(r.ls[r.i].text)) {
			child, err := r.block(r.ls[r.i].indent)
			if err != nil {
				return nil, err
			}
			m[k] = child
		} else {
			m[k] = nil
		}
	}
	if r.i < len(r.ls) && r.ls[r.i].indent > indent {
		return nil, fmt.Errorf("line %d: unexpected indentation", r.ls[r.i].n)
	}
	return m, nil
}

// yamlKeyValue splits "key: value" or "key:".
func yamlKeyValue(s string) (k, v string, ok bool) {
	if strings.HasPrefix(s, `"`) || strings.HasPrefix(s, `'`) {
		return "", "", false
	}
	if strings.HasSuffix(s, ":") && yamlKey.MatchString(s[:len(s)-1]) {
		return s[:len(s)-1], "", true
	}
	k, v, found := strings.Cut(s, ": ")
	if !found || !yamlKey.MatchString(k) {
		return "", "", false
	}
	return k, strings.TrimSpace(v), true
}

func yamlScalar(s string, n int) (string, error) {
	switch {
	case strings.HasPrefix(s, `"`):
		u, err := strconv.Unquote(s)
		if err != nil {
			return "", fmt.Errorf("line %d: %s: %v", n, s, err)
		}
		return u, nil
	case strings.HasPrefix(s, `'`):
		if len(s) < 2 || !strings.HasSuffix(s, `'`) {
			return "", fmt.Errorf("line %d: unterminated %s", n, s)
		}
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'"), nil
	}
	return s, nil
}

// at walks v by map keys and sequence indices.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("manifest: %v is not a mapping at %q", v, k)
			}
			if v, ok = m[k]; !ok {
				t.Fatalf("manifest: no %q in %v", k, path)
			}
		case int:
			s, ok := v.([]any)
			if !ok || k >= len(s) {
				t.Fatalf("manifest: no item %d in %v", k, path)
			}
			v = s[k]
		}
	}
	return v
}

// TestIndexedJobManifest checks deploy/serve-load-job.yaml: an Indexed Job
// with completions = parallelism = N, restartPolicy Never, the image the
// Dockerfile builds run by its entrypoint, and, for every index, the
// pod's arguments (with $(JOB_COMPLETION_INDEX) and $(START_AT) expanded
// as Kubernetes does) parse as serve-load's flags: segment i of N from the
// start given, rows to a distinct file on the mounted volume. The
// manifest is printed whole in docs/DISTRIBUTED.md.
func TestIndexedJobManifest(t *testing.T) {
	entry, image := dockerEntrypoint(t)
	src, err := os.ReadFile(filepath.Join("..", "..", "deploy", "serve-load-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := parseYAML(string(src))
	if err != nil {
		t.Fatalf("deploy/serve-load-job.yaml: %v", err)
	}
	if at(t, doc, "apiVersion") != "batch/v1" || at(t, doc, "kind") != "Job" || at(t, doc, "spec", "completionMode") != "Indexed" {
		t.Errorf("not a batch/v1 Indexed Job: %v %v %v", at(t, doc, "apiVersion"), at(t, doc, "kind"), at(t, doc, "spec", "completionMode"))
	}
	n, err := strconv.Atoi(fmt.Sprint(at(t, doc, "spec", "completions")))
	if err != nil || n < 2 || fmt.Sprint(at(t, doc, "spec", "parallelism")) != strconv.Itoa(n) {
		t.Fatalf("completions %v, parallelism %v; want equal, at least 2", at(t, doc, "spec", "completions"), at(t, doc, "spec", "parallelism"))
	}
	if at(t, doc, "spec", "backoffLimit") != "0" || at(t, doc, "spec", "template", "spec", "restartPolicy") != "Never" {
		t.Errorf("a retried pod would send its segment twice: backoffLimit %v, restartPolicy %v", at(t, doc, "spec", "backoffLimit"), at(t, doc, "spec", "template", "spec", "restartPolicy"))
	}
	c := at(t, doc, "spec", "template", "spec", "containers", 0)
	if at(t, c, "image") != image {
		t.Errorf("image %v; the Dockerfile builds %s", at(t, c, "image"), image)
	}
	if cmd := at(t, c, "command").([]any); len(cmd) != 1 || cmd[0] != entry {
		t.Errorf("command %v; want [%s], the image's entrypoint", cmd, entry)
	}
	env := map[string]string{}
	for _, e := range at(t, c, "env").([]any) {
		env[fmt.Sprint(at(t, e, "name"))] = fmt.Sprint(at(t, e, "value"))
	}
	const start = "2026-05-01T12:00:00Z"
	if env["START_AT"] != "__START_AT__" {
		t.Errorf("START_AT is %q; the docs substitute __START_AT__", env["START_AT"])
	}
	env["START_AT"] = start
	mount := fmt.Sprint(at(t, c, "volumeMounts", 0, "mountPath"))
	if claim := at(t, doc, "spec", "template", "spec", "volumes", 0, "persistentVolumeClaim", "claimName"); claim == "" {
		t.Error("the results volume names no claim")
	}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	jsonls := map[string]bool{}
	for i := range n {
		var args []string
		for _, a := range at(t, c, "args").([]any) {
			args = append(args, ref.ReplaceAllStringFunc(a.(string), func(m string) string {
				name := ref.FindStringSubmatch(m)[1]
				if name == "JOB_COMPLETION_INDEX" {
					return strconv.Itoa(i)
				}
				v, ok := env[name]
				if !ok {
					t.Errorf("argument %q refers to $(%s), which the container does not define", a, name)
				}
				return v
			}))
		}
		o, _, _, err := parse(args, &bytes.Buffer{})
		if err != nil {
			t.Fatalf("pod %d: serve-load %s: %v", i, strings.Join(args, " "), err)
		}
		if o.split.seg != (benchkit.Segment{Index: i, Count: n}) || o.split.start.Format("2006-01-02T15:04:05Z07:00") != start || !o.seeded {
			t.Errorf("pod %d runs segment %v from %v (seeded %v); want %d/%d from %s with --seed", i, o.split.seg, o.split.start, o.seeded, i, n, start)
		}
		if !strings.HasPrefix(o.jsonl, mount+"/") || jsonls[o.jsonl] {
			t.Errorf("pod %d writes rows to %q: not a file of its own under the volume at %s", i, o.jsonl, mount)
		}
		jsonls[o.jsonl] = true
	}
	docs, err := os.ReadFile(filepath.Join("..", "..", "docs", "DISTRIBUTED.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(docs, src) {
		t.Error("docs/DISTRIBUTED.md does not print deploy/serve-load-job.yaml whole")
	}
	if !bytes.Contains(docs, []byte("docker build -t "+image+" .")) {
		t.Errorf("docs/DISTRIBUTED.md does not build the image %s", image)
	}
}

// TestParseYAMLSubset checks the manifest reader on what it accepts and
// refuses.
func TestParseYAMLSubset(t *testing.T) {
	v, err := parseYAML("a: 1\nb:\n  - x\n  - name: n\n    value: \"q: r\"\nc:\n- 'it''s'\n")
	if err != nil {
		t.Fatal(err)
	}
	if at(t, v, "a") != "1" || at(t, v, "b", 0) != "x" || at(t, v, "b", 1, "value") != "q: r" || at(t, v, "c", 0) != "it's" {
		t.Errorf("parsed %v", v)
	}
	for _, bad := range []string{"a: [1, 2]", "a: 1\na: 2", "a:\n\tb: 1", "a: 1\n    b: 2", "a: |\n  x"} {
		if _, err := parseYAML(bad); err == nil {
			t.Errorf("parseYAML(%q) accepted it", bad)
		}
	}
}
