// Package promptsize builds chat prompts of an exact token count, counted the
// way the serving engine counts them: the messages rendered through the
// model's chat template with the generation prompt, then tokenized.
//
// A Counter does the counting (promptsize/hf with a model's tokenizer.json,
// promptsize/remote by asking the engine, or any function); a Builder finds
// the content:
//
//	b := &promptsize.Builder{Counter: counter}
//	p, err := b.Build(ctx, 4096) // p.Tokens == 4096, p.Messages ready to send
//
// The method is exo's — measure the template overhead with empty content,
// then search the number of repeated atoms ("a ") — with its failure modes
// removed:
//
//   - a target below the overhead is an *OverheadError (ErrBelowOverhead)
//     that names both numbers;
//   - an overshoot, where a tokenizer merge makes the count jump past the
//     target, is repaired by cutting inside the last atom or word, by a tail
//     of another atom, or by the next atom of Builder.Atoms; only when all
//     fail is there an *UnreachableError (ErrUnreachable) saying what was
//     tried;
//   - the search is a safeguarded secant search from the measured overhead
//     and the tokens per atom, with memoised counts and rates remembered
//     across builds, so it needs a few counter calls where exo's binary
//     search needs twenty (ExoSearch keeps exo's method for comparison;
//     Prompt.Calls reports the cost);
//   - Fill: FillCorpus cuts English prose (Prose, or Builder.Corpus) to the
//     count instead of repeating an atom, for engines whose speculative or
//     n-gram decoding repetition would flatter;
//   - BuildSalted puts a short per-request salt (Salt, RunSalt) first in
//     the user message, so that an engine's automatic prefix cache cannot
//     share prefill between concurrent requests; the salt opens with the
//     request's own index, so the prompts differ from their first content
//     token; every salted prompt is exact too.
//
// A Builder is safe for concurrent use and caches what it builds.
//
// # Template variables: thinking on, off, at an effort
//
// The Builder counts with its Counter as given. A request that makes the
// server render the chat template with further variables (a reasoning
// model's switch, chat_template_kwargs {"enable_thinking": false}, or
// gpt-oss's reasoning_effort) needs a Counter that renders with the same
// ones: Qwen3's template writes an empty <think>\n\n</think>\n\n into
// the generation prompt when thinking is off, 4 tokens on every request
// that a count without the variable misses. The Counters of promptsize/hf
// and promptsize/remote have a method for that, which callers find with a
// type assertion:
//
//	type withVars interface {
//		WithTemplateVars(map[string]any) promptsize.Counter
//	}
//	c = c.(withVars).WithTemplateVars(map[string]any{"enable_thinking": false})
//	b := &promptsize.Builder{Counter: c}
//
// engine.Thinking.TemplateVars gives the variables of a request's thinking
// control; benchkit's drivers make that Counter themselves.
//
// Subpackage countertest checks any Counter against the contract in one call.
//
// # Trace replay: blocks of hash ids
//
// Traces such as Mooncake's (one hash id per 512-token block) and Alibaba's
// Bailian (16) name each row's prompt as a chain of block ids, so that two
// rows share a prefix exactly as far as their leading ids agree. TokenBlocks
// turns an id into its block of tokens, drawn from a tokenizer's stable
// words (a Vocabulary; *hf.Tokenizer is one) by the id and a run seed: the
// same block wherever the id recurs, a partial last block the start of the
// full one, and the first tokens of blocks after one prefix all different,
// so that rows sharing k ids share exactly k·B tokens and not one more.
// BlockBuilder makes a row's prompt, checking 0 < input − (ids−1)·B ≤ B
// (ErrBlockRow):
//
//	blocks, err := promptsize.NewTokenBlocks(tok, promptsize.BlockOptions{Seed: seed})
//	b := &promptsize.BlockBuilder{Blocks: blocks, BlockSize: 16}
//	p, err := b.Build(ctx, row.HashIDs, row.InputLength) // p.TokenIDs for /v1/completions
//
// With Mode: BlockChat and a Counter, the row becomes one user message
// whose count after the chat template is exactly the input length: the
// template's tokens take the places of the first and last block tokens, so
// the templated prompt lines up with the blocks, and the count is verified
// (and repaired, should a template merge at the content's end).
package promptsize
