package benchkit

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/inferbench/inferbench/internal/httpsafe"
)

// Provenance records where a results file came from, so that a figure can
// be traced to the program, machine, command, prompts and server that
// produced it. The examples put one in every results file: under the
// JSON's meta, in the JSONL run header, and as benchfmt configuration
// lines (Config).
type Provenance struct {
	// Module, Version and Revision identify the program: its main
	// module's path and version and the VCS revision it was built from
	// (runtime/debug.ReadBuildInfo; "" when the build does not say), with
	// Modified set when the work tree had changes.
	Module   string `json:"module"`
	Version  string `json:"version,omitempty"`
	Revision string `json:"vcs_revision,omitempty"`
	Modified bool   `json:"vcs_modified,omitempty"`
	// GoVersion, OS and Arch are the toolchain and platform; CPUs the
	// logical CPUs usable and CPUModel their model name where the
	// platform tells it.
	GoVersion string `json:"go_version"`
	OS        string `json:"goos"`
	Arch      string `json:"goarch"`
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model,omitempty"`
	// Host is the machine's host name; "" when omitted (--no-host-info).
	Host string `json:"host,omitempty"`
	// Command is the full command line, every secret redacted
	// (redactArgs).
	Command []string `json:"command"`
	// Nonce is the run nonce in every prompt's salt; Seed the seed of the
	// lengths and schedule, and Seeded whether it was given (then it also
	// drew the nonce, and the prompts can be reproduced).
	Nonce  string `json:"nonce,omitempty"`
	Seed   uint64 `json:"seed"`
	Seeded bool   `json:"seeded,omitempty"`
	// SharedPrefix is the tokens every prompt shares after the chat
	// template (a prefix-cache ablation), 0 for none.
	SharedPrefix int `json:"shared_prefix_tokens,omitempty"`
	// TokenizerSHA256 and ChatTemplateSHA256 are the hex SHA-256 of the
	// tokenizer.json and of the chat template source the prompts were
	// counted with; "" when they were counted elsewhere (the server's
	// /tokenize, the embedded engine's built-in tokenizer).
	TokenizerSHA256    string `json:"tokenizer_sha256,omitempty"`
	ChatTemplateSHA256 string `json:"chat_template_sha256,omitempty"`
	// Server is what the server says about itself; nil when not asked.
	Server *ServerInfo `json:"server,omitempty"`
}

// ServerInfo is what a server says about itself.
type ServerInfo struct {
	// Header is its Server response header.
	Header string `json:"server_header,omitempty"`
	// Version is its reported version (vLLM's GET /version).
	Version string `json:"version,omitempty"`
	// Nodes are its node identities (exo's cluster state).
	Nodes []string `json:"nodes,omitempty"`
}

// NewProvenance describes this process: the build, the platform, the host
// (unless noHost) and the command line args, with every secret redacted
// (redactArgs). Set the nonce, seed, tokenizer and server fields as they
// become known.
func NewProvenance(args []string, noHost bool, secrets ...string) *Provenance {
	p := &Provenance{
		GoVersion: runtime.Version(),
		OS:        runtime.GOOS,
		Arch:      runtime.GOARCH,
		CPUs:      runtime.NumCPU(),
		CPUModel:  cpuModel(),
		Command:   redactArgs(args, secrets...),
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		p.Module, p.Version = bi.Main.Path, bi.Main.Version
		if p.Version == "(devel)" {
			p.Version = ""
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				p.Revision = s.Value
			case "vcs.modified":
				p.Modified = s.Value == "true"
			}
		}
		if p.GoVersion == "" {
			p.GoVersion = bi.GoVersion
		}
	}
	if !noHost {
		p.Host, _ = os.Hostname()
	}
	return p
}

// SetTokenizer records the SHA-256 of a tokenizer.json's bytes and of a
// chat template's source ("" leaves that field empty).
func (p *Provenance) SetTokenizer(tokenizerJSON []byte, templateSource string) {
	if tokenizerJSON != nil {
		p.TokenizerSHA256 = sha256Hex(tokenizerJSON)
	}
	if templateSource != "" {
		p.ChatTemplateSHA256 = sha256Hex([]byte(templateSource))
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// secretFlag reports whether a flag's name says its value is a secret
// (a key, token, password or secret), unless it names a variable or file
// holding one (-env, -file).
func secretFlag(name string) bool {
	name = strings.ToLower(strings.TrimLeft(name, "-"))
	if strings.HasSuffix(name, "-env") || strings.HasSuffix(name, "-file") || strings.HasSuffix(name, "_env") {
		return false
	}
	for _, w := range []string{"key", "token", "password", "passwd", "secret", "auth", "credential"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// redactArgs returns a command line fit for a results file: every
// occurrence of each secret redacted (httpsafe.Redact), the value of every
// flag whose name says it holds a secret (--api-key, --token, … but not
// --api-key-env, which names a variable) replaced by httpsafe.Redacted,
// and the password of any URL with user information redacted.
func redactArgs(args []string, secrets ...string) []string {
	out := make([]string, len(args))
	redactNext := false
	for i, a := range args {
		if redactNext {
			out[i], redactNext = httpsafe.Redacted, false
			continue
		}
		a = httpsafe.Redact(a, secrets...)
		if strings.HasPrefix(a, "-") && a != "-" && a != "--" {
			name, _, hasValue := strings.Cut(a, "=")
			if secretFlag(name) {
				if hasValue {
					a = name + "=" + httpsafe.Redacted
				} else {
					redactNext = true
				}
			}
		}
		out[i] = redactURLPassword(a)
	}
	return out
}

// redactURLPassword redacts the password of every scheme://user:pass@
// in a.
func redactURLPassword(a string) string {
	var b strings.Builder
	for {
		i := strings.Index(a, "://")
		if i < 0 {
			b.WriteString(a)
			return b.String()
		}
		b.WriteString(a[:i+3])
		a = a[i+3:]
		end := strings.IndexAny(a, "/?# ")
		if end < 0 {
			end = len(a)
		}
		at := strings.LastIndex(a[:end], "@")
		if at < 0 {
			continue
		}
		if user, _, ok := strings.Cut(a[:at], ":"); ok {
			b.WriteString(user + ":" + httpsafe.Redacted)
		} else {
			b.WriteString(httpsafe.Redacted) // a token given as the user
		}
		a = a[at:]
	}
}

// cpuModel returns the CPU's model name from /proc/cpuinfo, "" where there
// is none.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name", "Model", "cpu model", "Hardware":
			if v = strings.TrimSpace(v); v != "" {
				return v
			}
		}
	}
	return ""
}

// Config returns the provenance as benchfmt file configuration lines
// (BenchfmtOptions.Config), keys in a fixed order, empty values left out.
// The keys that differ on every invocation (nonce, command, host, seed)
// split benchstat's tables when two files are compared: compare with
// `benchstat -ignore nonce,command,host,seed old.txt new.txt`.
func (p *Provenance) Config() [][2]string {
	if p == nil {
		return nil
	}
	var kv [][2]string
	add := func(k, v string) {
		if v = strings.ReplaceAll(strings.ReplaceAll(v, "\n", " "), "\r", " "); v != "" {
			kv = append(kv, [2]string{k, v})
		}
	}
	add("goos", p.OS)
	add("goarch", p.Arch)
	add("cpu", p.CPUModel)
	add("ncpu", strconv.Itoa(p.CPUs))
	add("go", p.GoVersion)
	add("module", p.Module)
	add("version", p.Version)
	rev := p.Revision
	if rev != "" && p.Modified {
		rev += "+modified"
	}
	add("vcs-revision", rev)
	add("tokenizer-sha256", p.TokenizerSHA256)
	add("chat-template-sha256", p.ChatTemplateSHA256)
	if p.Server != nil {
		add("server", p.Server.Header)
		add("server-version", p.Server.Version)
		add("server-nodes", strings.Join(p.Server.Nodes, ","))
	}
	add("host", p.Host)
	add("command", strings.Join(p.Command, " "))
	add("nonce", p.Nonce)
	add("seed", strconv.FormatUint(p.Seed, 10))
	return kv
}

// HashTokenizerDir records in p the SHA-256 of dir's tokenizer.json and
// of its chat template's source: chat_template.jinja when present, else
// tokenizer_config.json's chat_template as written (the raw JSON value).
func (p *Provenance) HashTokenizerDir(dir string) error {
	tok, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return err
	}
	tmpl, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja"))
	if errors.Is(err, os.ErrNotExist) {
		var cfg struct {
			ChatTemplate json.RawMessage `json:"chat_template"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return fmt.Errorf("tokenizer_config.json: %w", err)
		}
		var src string
		if json.Unmarshal(cfg.ChatTemplate, &src) != nil {
			src = string(cfg.ChatTemplate)
		}
		p.SetTokenizer(tok, src)
		return nil
	}
	if err != nil {
		return err
	}
	p.SetTokenizer(tok, string(tmpl))
	return nil
}
