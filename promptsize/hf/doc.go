// Package hf is a pure-Go Hugging Face tokenizer and chat-template Counter.
// It loads a model directory (tokenizer.json, tokenizer_config.json and,
// when present, chat_template.jinja), encodes text exactly as Hugging Face's
// tokenizers library does, and counts chat requests as a serving engine
// does: the messages rendered through the chat template with the generation
// prompt, then tokenized without adding special tokens (templates emit their
// own BOS).
//
//	tok, err := hf.Load("path/to/model")             // *hf.Tokenizer
//	ids := tok.Encode("Hello, world")                // []int, no BOS/EOS added
//	text := tok.Decode(ids)
//	n, err := tok.Count(ctx, []promptsize.Message{{Role: "user", Content: "Hi"}})
//	prompt, err := tok.Render(msgs, hf.RenderOptions{AddGenerationPrompt: true})
//
// *Tokenizer implements promptsize.Counter and is safe for concurrent use.
// It is also a promptsize.Vocabulary (OrdinaryTokens: the ids that are no
// added, special, byte-fallback or unknown token) and a
// promptsize.ContentLocator (ContentOffset: the template's tokens before
// the last message's content), which is what promptsize.TokenBlocks and
// BlockBuilder need to replay traces of hash-id blocks. WithTemplateVars
// returns a Counter (a *Tokenizer sharing the tokenizer's data) that renders
// with further template variables, as a server does for a request's
// chat_template_kwargs or reasoning_effort: counts stay exact with thinking
// on, off or at an effort (testdata/thinking.json holds Python Jinja2's
// renderings of Qwen3's and gpt-oss's templates under each, with the Rust
// tokenizers library's ids, from scripts/thinking_goldens.py).
// ChatTemplate, ParseChatTemplate, LoadChatTemplate and LoadSpecialTokens
// expose the template rendering on its own; package hfcgo reuses it over
// Hugging Face's Rust tokenizer.
//
// # Encoding
//
// Encode follows Hugging Face's pipeline step by step:
//
//  1. Added tokens (special or not) are split out of the raw text first,
//     leftmost-longest, with a byte trie (Gemma 3 has 6,415 of them, "\n"
//     and "\n\n" among them).
//  2. Each stretch between them goes through the declared normalizer (NFC,
//     NFD, NFKC, NFKD, Replace, Prepend, Sequence).
//  3. The pre-tokenizer sequence runs in order: every Split pattern is
//     applied to every piece the previous step left, with its behaviour
//     (Isolated, MergedWithPrevious, ...). Regex patterns run on
//     github.com/dlclark/regexp2, which has the lookahead Go's regexp lacks;
//     the patterns of Llama 3, Qwen2/3, o200k (gpt-oss) and DeepSeek V3 run
//     on hand-written matchers with the same semantics, checked against
//     regexp2 by FuzzFastSplit.
//  4. A ByteLevel step maps every piece to bytes; the BPE model then merges
//     adjacent symbols, always the pair whose merge comes first in the
//     merges list, and among equal ranks the leftmost, until none merges.
//     ignore_merges takes a piece found whole in the vocabulary as it is.
//     Without ByteLevel (SentencePiece style, Gemma 3) the symbols are
//     characters, and a character outside the vocabulary becomes <0xNN>
//     byte tokens (byte_fallback) or the unknown token.
//
// A Split pattern runs on regexp2 with a match timeout of one second: a
// pattern that backtracks catastrophically makes Count return an error
// wrapping ErrPatternTimeout (Encode and CountText, which return no error,
// leave the rest of that piece unsplit).
//
// Anything else in tokenizer.json (other models, normalizers,
// pre-tokenizers or decoders, dropout, added tokens with lstrip, rstrip or
// single_word) is refused at load with an *UnsupportedError that names it,
// never approximated. The post-processor is not applied: Encode is
// add_special_tokens=False. Ids of short pieces are cached (bounded,
// concurrency-safe; see WithCacheSize).
//
// # tiktoken-format vocabularies (Kimi K2, cl100k_base, o200k_base)
//
// Some models ship a tiktoken BPE rank file (one "base64(token) rank" line
// per token) instead of a tokenizer.json. NewTiktoken builds a Tokenizer
// from such a file, a split pattern and special tokens (CL100KBase and
// O200KBase give OpenAI's); LoadTiktoken reads a model directory in Kimi
// K2's layout. To count for a Kimi K2 directory (tiktoken.model,
// tokenizer_config.json and its chat template):
//
//	tok, err := hf.LoadTiktoken("path/to/Kimi-K2-Instruct", hf.KimiK2Pattern)
//	n, err := tok.Count(ctx, msgs)  // rendered, then encoded as Kimi's tokenizer class does
//
// The split pattern lives in that model's Python code, not in its files,
// hence the argument. The special tokens are the 256 ids after the ranks,
// named by tokenizer_config.json's added_tokens_decoder or else
// <|reserved_token_ID|>, as Kimi's tokenizer class names them. Ranks are
// ids; BPE merges the adjacent pair whose concatenation has the lowest rank,
// leftmost first, as tiktoken does. Encode equals tiktoken's
// encode(text, allowed_special="all") on cl100k_base and o200k_base for the
// golden texts, random strings and corpus below (tiktoken@1.0.22, OpenAI's
// Rust core built to WebAssembly), and so does o200k_base's vocabulary
// under Kimi K2's pattern and directory layout, where Kimi's cutting of
// runs longer than 25,000 characters and of texts longer than 400,000 is
// checked too (TestTiktokenGoldens). No real Kimi K2 tiktoken.model is in
// the tests.
//
// # Chat templates
//
// Templates render as transformers' apply_chat_template renders them with
// Python's Jinja2, which is what vLLM, SGLang and mlx_lm serve with:
// trim_blocks and lstrip_blocks, one trailing newline of the source
// dropped, tojson as json.dumps(ensure_ascii=False) with key order kept,
// raise_exception (a *TemplateError carrying the template's message),
// tools and documents passed as none when absent. The source is lexed here
// with Jinja2's own rules (whitespace control, string escapes, raw,
// comments; jinjasrc.go) and evaluated by github.com/ardanlabs/jinja
// v1.12.0 with order-preserving values; tojson, items, format, length and
// the for-loop iterable follow Python (pyfilters.go, budget.go).
// strftime_now formats RenderOptions.Date, or the time of rendering when it
// is zero; pin it for reproducible prompts. The list form of chat_template
// is supported: "tool_use" is chosen when tools are given and it exists,
// else "default".
//
// Expressions are parsed with Jinja2's grammar (jinjaexpr.go) and the
// operations where Python raises and the library would not become checked
// calls (pyops.go): +, -, *, /, //, %, ** and unary minus compute as Python
// does; <, <=, >, >= refuse to order a str and an int; "in" on none or a
// number is a TypeError, on an undefined value false; an attribute or item
// of an undefined value is an UndefinedError; tojson, length and last of a
// map/select/reject/items/... generator are the TypeError Python raises.
// Tests run as Jinja2's: an undefined value is iterable, a sequence and
// callable (Jinja2's Undefined iterates as empty), so a loop over it
// prints nothing and a schema walker that asks "is iterable" of a missing
// field takes that branch; a generator is no sequence; a bool is a number;
// odd, even and divisibleby compute value % n with Python's errors; gt,
// ge, lt, le and in are the checked operators. Such a failure is a
// *TemplateExprError naming Python's error kind, the line, the operation's
// source and the types, e.g.
//
//	line 14: TypeError: can only concatenate str (not "list") to str, in '<s>' + message['content']
//
// A str added to a Markup ("..."|safe, |escape) is HTML-escaped as
// markupsafe does; Markup-ness is known from the expression's form (a safe
// filter, or a + with such an operand), not carried by variables. Not
// modelled: a tuple + tuple prints as a list (the library builds no tuples
// outside literals), the int keys of a dict literal are strings (so they
// order as ints against numbers), non-ASCII identifiers, *args in calls,
// the tests that select, reject, selectattr and rejectattr name (the
// library runs its own), lower and upper of a value that is not a str.
//
// The corpus test (TestTemplateCorpus) renders 63 real templates from
// public repositories and npm tokenizer packages
// (testdata/templates/index.json: repository or package, path, commit or
// tarball sha1, sha256; the files themselves are not in the repository
// but beside it, in ../shared/data/chat-templates from its root, and the
// test skips without them) with 13 conversations each and compares with the
// Jinja2 3.1.6 goldens of scripts/chat_template_goldens.py: all 691 cases
// Jinja2 renders are byte-identical, and all 128 where it raises are errors in Go
// (raise_exception with the template's message, the others of Python's
// kind). TestTemplateExpressions does the same for one-line probes of
// every operator (testdata/templates/expressions.txt).
//
// A rendering is bounded (RenderLimits, ErrTemplateBudget): for-loop
// iterations, macro calls and range() items together (default 250,000;
// range and a loop's iterable are checked before they are built), macro
// nesting (500), and bytes printed (64 MiB, counting output captured by set
// blocks and macros, so the prompt is no longer). RenderContext and Count
// stop with the context's error, noticed at the next print, loop iteration
// or macro call, and by Count every 64 pieces while it encodes. Not
// bounded: the size of a value built without a loop (ardanlabs/jinja caps
// a repeated string or list at 64 MiB, str * n and list * n are capped
// alike; a string doubled in a loop grows within the step budget).
//
// # Exactness
//
// The golden tests compare ids, not counts, with the reference libraries
// (for encoding Hugging Face's Rust tokenizers, npm tokenizers@0.23.2, and
// @lenml/tokenizers@3.7.2, a fork of transformers.js, which agree on every
// golden id; the Rust library's ids are written should they ever differ;
// @huggingface/jinja@0.5.11 for rendering; scripts/node/goldens.mjs, and
// scripts/node/crosscheck.mjs to check the committed ids against the Rust
// library) on the real tokenizer files of
// Qwen3, Llama 3.1, gpt-oss, Gemma 3 and DeepSeek V3 (scripts/testdata.sh
// fetches them): 36 texts plus each model's special-token text, 500 seeded
// random strings, a 200 KB mixed corpus, and 27 chat cases per template
// (Qwen3, Llama 3.1 as shipped, the official Llama 3.x, gpt-oss harmony,
// Gemma 3, DeepSeek V3), rendered string and ids. The goldens are
// committed; REGEN_GOLDENS=1 scripts/testdata.sh rewrites them (it needs npm
// and writes byte-identical files when nothing changed). All match. Character classes (\s, \p{L}, ...) use
// Go's unicode tables; a character whose class differs between those tables
// and another implementation's Unicode version may tokenize differently.
//
// # Speed
//
// Encoding the 200 KB golden corpus on one core (AMD EPYC, shared machine),
// first call with an empty cache, against the JavaScript reference's first
// call on the same corpus in Node 20:
//
//	model        Go (cold)      Node (cold)   ratio
//	qwen3        14.7M tok/s    322-408k      36-45x
//	llama3_1     14.9M tok/s    454-572k      26-33x
//	gptoss       11.3M tok/s    456-538k      21-25x
//	gemma3        2.5M tok/s    221-228k      11x
//	deepseek_v3   7.7M tok/s    412-429k      18x
//
// measured with
//
//	go test -run '^$' -bench EncodeCorpus -cpu 1 ./promptsize/hf/
//	node scripts/node/speed.mjs
//
// (Node figures from two runs around the Go run). With the cache off the Go
// figures are 9.3M, 17.9M, 12.9M, 2.1M and 5.9M tok/s. Counting a chat
// request of about 4,000 tokens takes 0.16-0.26 ms (0.7 ms for Gemma 3,
// whose whole line is one BPE word): BenchmarkCount. Loading a
// tokenizer.json takes 0.2-0.8 s (Gemma 3: 33 MB).
package hf
