//go:build integration

// Command tinymodel writes a tiny Llama-architecture model with random
// weights as a Hugging Face directory (config.json, model.safetensors and a
// real tokenizer), and an Ollama Modelfile that imports it, so that a real
// inference server can be tested where no weights can be downloaded.
//
//	go run -tags integration ./integration/cmd/tinymodel -out DIR -tokenizer testdata/models/llama3_1
//
// The tokenizer files are copied as they are, so a request's token counts and
// chat template are the real model's; the generated text is noise. Two things
// are built into the weights so that a stream is predictable:
//
//   - The output head can only pick tokens whose text is printable ASCII
//     (-ascii, the default). One residual dimension is held at a constant
//     (every embedding has 1 there, and no layer writes to it), and the head
//     gives every other token a large negative weight on it. Ollama holds back
//     a token that ends in the middle of a UTF-8 character and sends it with
//     the next one, and never sends the end-of-sequence token's text; without
//     them every token is one chunk and every reply runs to max_tokens.
//     -ascii=false leaves the head plain random.
//   - The Modelfile's TEMPLATE renders a chat exactly as the tokenizer's
//     Hugging Face template does, BOS included (Ollama's converter marks the
//     BOS as not added, so the template's is the only one); the program
//     checks the two renderings against each other before writing anything.
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/hf"
)

// ollamaTemplate is the tokenizer's chat template (Llama 3's: the BOS, then
// every turn between its header and <|eot_id|>, then the assistant's header)
// in Ollama's Go template language. Newlines are written as string constants
// so that no Modelfile parser can trim them. Two differences remain, which
// the tests' prompts never meet: Hugging Face's template trims each message's
// text, and Ollama merges consecutive messages of one role.
const ollamaTemplate = `<|begin_of_text|>` +
	`{{ range .Messages }}<|start_header_id|>{{ .Role }}<|end_header_id|>{{ "\n\n" }}{{ .Content }}<|eot_id|>{{ end }}` +
	`<|start_header_id|>assistant<|end_header_id|>{{ "\n\n" }}`

type config struct {
	Architectures         []string `json:"architectures"`
	ModelType             string   `json:"model_type"`
	VocabSize             int      `json:"vocab_size"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	NumKeyValueHeads      int      `json:"num_key_value_heads"`
	HeadDim               int      `json:"head_dim"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	RMSNormEps            float64  `json:"rms_norm_eps"`
	RopeTheta             float64  `json:"rope_theta"`
	TieWordEmbeddings     bool     `json:"tie_word_embeddings"`
	TorchDtype            string   `json:"torch_dtype"`
	BOSTokenID            int      `json:"bos_token_id"`
	EOSTokenID            []int    `json:"eos_token_id"`
}

type tensor struct {
	name  string
	shape []int
	data  []float32
}

func main() {
	out := flag.String("out", "", "directory to write the model into (created)")
	tokDir := flag.String("tokenizer", "testdata/models/llama3_1", "directory with the real tokenizer.json and tokenizer_config.json")
	layers := flag.Int("layers", 2, "transformer layers")
	hidden := flag.Int("hidden", 64, "hidden size")
	heads := flag.Int("heads", 4, "attention heads")
	kvHeads := flag.Int("kv-heads", 2, "key/value heads")
	ctxLen := flag.Int("context", 8192, "max_position_embeddings")
	seed := flag.Uint64("seed", 1, "random seed of the weights")
	ascii := flag.Bool("ascii", true, "let the output head pick printable-ASCII tokens only")
	name := flag.String("modelfile", "Modelfile", "name of the Modelfile written in -out")
	threads := flag.Int("threads", 0, "the Modelfile's num_thread, threads per request batch (0: Ollama's default, one a physical core)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "tinymodel: -out is required")
		os.Exit(2)
	}
	if err := run(*out, *tokDir, *name, *layers, *hidden, *heads, *kvHeads, *ctxLen, *threads, *seed, *ascii); err != nil {
		fmt.Fprintln(os.Stderr, "tinymodel:", err)
		os.Exit(1)
	}
}

func run(out, tokDir, modelfile string, layers, hidden, heads, kvHeads, ctxLen, threads int, seed uint64, ascii bool) error {
	if hidden%heads != 0 || heads%kvHeads != 0 {
		return fmt.Errorf("hidden %d, heads %d and kv-heads %d do not divide", hidden, heads, kvHeads)
	}
	tok, err := hf.Load(tokDir)
	if err != nil {
		return fmt.Errorf("loading the tokenizer: %w", err)
	}
	if err := checkTemplate(tok); err != nil {
		return err
	}
	vocab, err := vocabSize(filepath.Join(tokDir, "tokenizer.json"))
	if err != nil {
		return err
	}
	allowed := make([]bool, vocab)
	nAllowed := 0
	for _, id := range tok.OrdinaryTokens() {
		if id < vocab && printable(tok.Decode([]int{id})) {
			allowed[id] = true
			nAllowed++
		}
	}
	if !ascii {
		for i := range allowed {
			allowed[i] = true
		}
	} else if nAllowed < 1000 {
		return fmt.Errorf("only %d printable-ASCII tokens in the vocabulary", nAllowed)
	}

	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		if err := copyFile(filepath.Join(tokDir, f), filepath.Join(out, f)); err != nil {
			return err
		}
	}
	headDim := hidden / heads
	cfg := config{
		Architectures: []string{"LlamaForCausalLM"}, ModelType: "llama",
		VocabSize: vocab, HiddenSize: hidden, IntermediateSize: 2 * hidden,
		NumHiddenLayers: layers, NumAttentionHeads: heads, NumKeyValueHeads: kvHeads,
		HeadDim: headDim, MaxPositionEmbeddings: ctxLen,
		RMSNormEps: 1e-5, RopeTheta: 500000, TorchDtype: "float32",
		BOSTokenID: 128000, EOSTokenID: []int{128001, 128008, 128009},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "config.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}

	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	normal := func(n int, sd float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * sd)
		}
		return v
	}
	ones := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = 1
		}
		return v
	}
	// keep0 zeroes output row 0 of a [out, in] matrix: nothing is added to
	// the residual stream's dimension 0, which stays the embeddings' 1.
	keep0 := func(v []float32, in int) []float32 {
		clear(v[:in])
		return v
	}
	inter := cfg.IntermediateSize
	embed := normal(vocab*hidden, 0.02)
	for t := range vocab {
		embed[t*hidden] = 1
	}
	head := normal(vocab*hidden, 1)
	for t := range vocab {
		row := head[t*hidden : (t+1)*hidden]
		if allowed[t] {
			// No weight on the constant dimension: the logit is the
			// random rest.
			row[0] = 0
			continue
		}
		// Normalised, dimension 0 is about sqrt(hidden) while the others
		// are well below 1: -20 puts these logits a hundred and more
		// below any allowed token's.
		clear(row)
		row[0] = -20
	}
	ts := []tensor{
		{"model.embed_tokens.weight", []int{vocab, hidden}, embed},
		{"model.norm.weight", []int{hidden}, ones(hidden)},
		{"lm_head.weight", []int{vocab, hidden}, head},
	}
	sd := 1 / math.Sqrt(float64(hidden))
	for l := range layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		ts = append(ts,
			tensor{p + "input_layernorm.weight", []int{hidden}, ones(hidden)},
			tensor{p + "post_attention_layernorm.weight", []int{hidden}, ones(hidden)},
			tensor{p + "self_attn.q_proj.weight", []int{heads * headDim, hidden}, normal(heads*headDim*hidden, sd)},
			tensor{p + "self_attn.k_proj.weight", []int{kvHeads * headDim, hidden}, normal(kvHeads*headDim*hidden, sd)},
			tensor{p + "self_attn.v_proj.weight", []int{kvHeads * headDim, hidden}, normal(kvHeads*headDim*hidden, sd)},
			tensor{p + "self_attn.o_proj.weight", []int{hidden, heads * headDim}, keep0(normal(hidden*heads*headDim, 0.02), heads*headDim)},
			tensor{p + "mlp.gate_proj.weight", []int{inter, hidden}, normal(inter*hidden, sd)},
			tensor{p + "mlp.up_proj.weight", []int{inter, hidden}, normal(inter*hidden, sd)},
			tensor{p + "mlp.down_proj.weight", []int{hidden, inter}, keep0(normal(hidden*inter, 0.02), inter)},
		)
	}
	if err := writeSafetensors(filepath.Join(out, "model.safetensors"), ts); err != nil {
		return err
	}

	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	mf := fmt.Sprintf("FROM %s\nTEMPLATE \"\"\"%s\"\"\"\n", abs, ollamaTemplate)
	if threads > 0 {
		mf += fmt.Sprintf("PARAMETER num_thread %d\n", threads)
	}
	if err := os.WriteFile(filepath.Join(out, modelfile), []byte(mf), 0o644); err != nil {
		return err
	}
	fmt.Printf("tinymodel: wrote %s (%d layers, hidden %d, vocab %d, %d tokens the head can pick)\n",
		abs, layers, hidden, vocab, countTrue(allowed))
	return nil
}

// vocabSize is the model's vocabulary: one past the largest id of
// tokenizer.json's vocabulary and added tokens (128256 for Llama 3.1).
func vocabSize(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var t struct {
		Added []struct {
			ID int `json:"id"`
		} `json:"added_tokens"`
		Model struct {
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	n := 0
	for _, id := range t.Model.Vocab {
		n = max(n, id+1)
	}
	for _, a := range t.Added {
		n = max(n, a.ID+1)
	}
	if n == 0 {
		return 0, fmt.Errorf("%s: no vocabulary", path)
	}
	return n, nil
}

func printable(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func countTrue(v []bool) int {
	n := 0
	for _, b := range v {
		if b {
			n++
		}
	}
	return n
}

// checkTemplate renders a few chats through ollamaTemplate (as Ollama does:
// the system messages joined as .System, every message in .Messages) and
// through the tokenizer's Hugging Face template, and fails unless they agree.
func checkTemplate(tok *hf.Tokenizer) error {
	tmpl, err := template.New("ollama").Parse(ollamaTemplate)
	if err != nil {
		return fmt.Errorf("the Ollama template: %w", err)
	}
	chats := [][]promptsize.Message{
		{{Role: "user", Content: "Hello, world"}},
		{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Why is the sky blue?"}},
		{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello! How can I help?"}, {Role: "user", Content: "Count to three."}},
	}
	for _, msgs := range chats {
		want, err := tok.Render(msgs, hf.RenderOptions{AddGenerationPrompt: true})
		if err != nil {
			return fmt.Errorf("rendering the Hugging Face template: %w", err)
		}
		var system []string
		type message struct{ Role, Content string }
		var ms []message
		for _, m := range msgs {
			if m.Role == "system" {
				system = append(system, m.Content)
			}
			ms = append(ms, message{m.Role, m.Content})
		}
		var got bytes.Buffer
		if err := tmpl.Execute(&got, map[string]any{"System": strings.Join(system, "\n\n"), "Messages": ms}); err != nil {
			return err
		}
		if got.String() != want {
			return fmt.Errorf("the Ollama template renders %q where the tokenizer's renders %q", got.String(), want)
		}
	}
	return nil
}

// writeSafetensors writes ts as one float32 safetensors file: an 8-byte
// little-endian header length, the JSON header (dtype, shape, data_offsets
// per tensor, padded with spaces to 8 bytes), then the tensors' bytes.
func writeSafetensors(path string, ts []tensor) (err error) {
	slices.SortFunc(ts, func(a, b tensor) int { return strings.Compare(a.name, b.name) })
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	off := 0
	for _, t := range ts {
		n := 1
		for _, d := range t.shape {
			n *= d
		}
		if n != len(t.data) {
			return fmt.Errorf("%s: shape %v holds %d values, not %d", t.name, t.shape, n, len(t.data))
		}
		header[t.name] = map[string]any{"dtype": "F32", "shape": t.shape, "data_offsets": []int{off, off + 4*n}}
		off += 4 * n
	}
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	w := io.Writer(f)
	if err := binary.Write(w, binary.LittleEndian, uint64(len(h))); err != nil {
		return err
	}
	if _, err := w.Write(h); err != nil {
		return err
	}
	buf := make([]byte, 0, 1<<20)
	for _, t := range ts {
		for _, v := range t.data {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			if len(buf) == cap(buf) {
				if _, err := w.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
	}
	_, err = w.Write(buf)
	return err
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
