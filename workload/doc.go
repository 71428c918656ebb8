// Package workload reads public LLM traces and datasets as streams of
// requests, Rows, that a driver replays: Mooncake and Bailian traces with
// their prefix-chained block ids, BurstGPT and Azure traces of lengths and
// times, ShareGPT conversations and custom JSONL prompts.
//
// It is a leaf: it imports only the standard library, and it neither
// builds prompts (promptsize does, token-exactly, one block of B tokens
// per hash id) nor sends them (a driver does, at Row.At).
//
// A Reader streams one file: memory holds one line (or ShareGPT record)
// whatever the file's size. A row that breaks its format's rules refuses
// the file with a *RowError naming the file, line and rule,
//
//	trace.jsonl line 812: hash_ids has 3 ids for input_length 6758 at block 512; want 14
//
// or, with Options.SkipBad, is skipped and counted in Stats.Bad by rule.
// ReadAll reads a whole file, as a caller that must not send part of a
// refused trace does.
//
// # Formats
//
// Mooncake (FAST'25 trace release, kvcache-ai/Mooncake
// FAST25-release/traces): JSONL, one request a line,
//
//	{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, …, 13]}
//
// timestamp (milliseconds, Unit), input_length and hash_ids (one id per
// 512-token block, BlockSize) are required; output_length is optional
// (Row.Output 0 without it), and AIPerf's session_id (a string or an
// integer) fills Row.Session. Other keys are ignored. The
// block rule: a row with input length I and n ids at block size B is
// refused unless 0 < I − (n−1)·B ≤ B, that is n = ⌈I/B⌉, as AIPerf and
// GuideLLM check it (vLLM's timed_trace instead truncates the prompt).
//
// Bailian (Qwen Bailian usage traces, alibaba-edu/qwen-bailian-usagetraces-anon,
// qwen_traceA_blksz_16.jsonl, qwen_traceB_…, qwen_coder_…, qwen_thinking_…):
// Mooncake's fields with timestamp in seconds (a float), 16-token blocks,
// and chat_id (Row.ID; required), parent_chat_id (Row.Parent; −1, or
// absent, is a root and reads as ""), turn (Row.Turn, from 1; 1 when
// absent, as AIPerf reads it) and type (Row.Type: text, search, image,
// file). A
// follow-up's input_length and hash_ids cover its whole context, history
// included; LinkSessions groups the rows into conversations.
//
// BurstGPT (HPMLL/BurstGPT, BurstGPT_1.csv …): CSV with a header,
//
//	Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
//
// columns found by name in any order (later releases add Session ID,
// which fills Row.Session, and Elapsed time). Timestamp is in seconds;
// Request and Response tokens are Input and Output; Log Type is Row.Type.
// Rows with Response tokens 0 are failed requests: they are dropped and
// counted (Stats.Failed), as vLLM and the BurstGPT_without_fails files do.
// Options.Model keeps one model's rows.
//
// Azure (Azure/AzurePublicDataset, AzureLLMInferenceTrace_{code,conv}.csv
// and the 2024 week-long files): CSV with the header
// TIMESTAMP,ContextTokens,GeneratedTokens; TIMESTAMP is a UTC date with up
// to nine fractional digits ("2023-11-16 18:15:46.6805900"), and offsets
// run from the first row (with Absolute, from the Unix epoch).
//
// ShareGPT (ShareGPT_Vicuna_unfiltered, ShareGPT_V3_unfiltered_cleaned_split.json):
// one JSON array of {"id", "conversations": [{"from", "value"}, …]} (the key
// "conversation" is read too). from maps to a role: human and user to user;
// gpt, chatgpt, assistant, bing and bard to assistant; system to system;
// any other is a bad row. By default each conversation is one row (Row.ID
// its id): the messages up to and including its first user message, with
// Output 0 (the dataset's reply has no token count here; vLLM counts it
// with a tokenizer). With Options.AllTurns each user message is a row of
// the session (Row.Session the id, or "#N" for record N without one; Row.Turn
// from 1) whose Messages are those after the previous user message up to
// and including this one: turn 1 holds any system message and the first
// user message, turn k > 1 the recorded reply to turn k−1 and the next
// user message, so the turns' Messages in order are the recorded
// conversation and a driver that sends its own replies replaces each turn's
// leading assistant messages. The last reply is not read. Conversations
// without a user message are dropped and counted (Stats.NoUser). Row.Line
// is the record's 1-based index in the array.
//
// Custom JSONL (vLLM's custom dataset): one object a line with "prompt"
// (a text, read as one user message) or "messages" (OpenAI chat messages
// with role system, user or assistant and content a string or an array of
// text parts), and an optional "output_tokens" (Row.Output).
//
// Rows of ShareGPT and custom JSONL carry text, not lengths: Input is 0 and
// At is Untimed. Every other key or column is ignored.
//
// # Inferring the format
//
// With no Options.Format, NewReader looks at the start of the file: a '['
// before anything but white space is ShareGPT. Otherwise the first line
// that is not blank decides: a JSON object with input_length or hash_ids
// is a trace, Bailian if it also has chat_id, parent_chat_id, turn or type
// and Mooncake if not; one with prompt or messages is custom JSONL; a CSV
// header with Timestamp and Request tokens is BurstGPT, one with TIMESTAMP
// and ContextTokens is Azure. ParseFormat selects one by name instead.
//
// # Order of the filters
//
// Each row is checked against its format's rules first (a bad row is
// refused or, with SkipBad, counted). Then, in this order: the zero point
// is set by the first row that passed (even one dropped next); a row
// earlier than the one before it is a bad row (rule "order") unless Sort
// is set; BurstGPT failures, other models and ShareGPT conversations
// without a user message are dropped; MaxInput drops long rows and
// MinInput short ones; rows
// before Start are dropped and reading stops after End; At is computed
// (Options, section Time); MaxOutput caps Output; reading stops after
// Limit rows. Every drop is counted in Stats.
//
// # Bounds
//
// Hostile input gets a bound and a bad row, not an allocation: a line or
// ShareGPT record over MaxLineBytes (16 MiB), lengths below 1 or over
// MaxTokens (10⁷), more hash ids than ⌈input/B⌉ or MaxHashIDs (2²⁰), an id
// outside [0, 2⁶³), timestamps that are negative, not finite (JSON has no
// NaN; a CSV "NaN" is refused) or over MaxTime (100 years), JSON nested
// more than 64 deep, CSV records with more fields than their header.
// A UTF-8 byte order mark and CRLF line ends are accepted. A last line
// without a line end is read if it parses and is a bad row (rule
// "truncated") if it does not.
//
// # Prefix reuse
//
// PrefixHitRate computes the hit rate a perfect prefix cache would reach
// on a trace's hash ids: the theoretical figure to set beside the hit rate
// a server reports.
package workload
