// Package compare says whether B is better than A from two saved results
// files: per figure, the change with its interval, a test whose
// assumptions hold for what is compared, and a verdict (better, worse, no
// change detected), with a threshold that makes it a gate for CI.
//
// Load reads any inferbench program's results file, its kind detected:
// serve-load's and offline's LoadDocument, exo-bench's Document,
// multi-turn's SessionsDocument, bench-qwen's document, a merged load
// (serve-load merge), or the JSONL rows of any of them. It splits the
// file into groups (a sweep's rates, exo-bench's cells, multi-turn's
// prefix cache modes, bench-qwen's scales) and each group into its
// independent units:
//
//   - exo-bench: the repeats (bursts) of each cell;
//   - several runs at the same settings in one file (JSONL rows appended
//     by several runs, a sweep that repeats a rate): the runs;
//   - one run: batch means. Its requests, ordered by send instant, are
//     split into min(Batches, n/MinBatch) consecutive batches (10 of at
//     least 10 by default) and every figure is computed per batch. The
//     requests of one run are not independent samples: they share the
//     server's queue, so a request sent behind a slow one waits for it and
//     neighbours' latencies are correlated. Batches of consecutive
//     requests are much less so; where the batches' lag-1
//     autocorrelation r still exceeds 2/√k, the variance of their mean is
//     multiplied by (1 + r)/(1 − r) and the row says "widened".
//
// Compare refuses two files whose runs measured different things (the
// model, the prompt and output lengths, the rates and traffic, thinking,
// streaming, the embedded engine's preset, the provenance's tokenizer,
// chat template and server description, exo-bench's plan, multi-turn's
// sessions), naming each difference (a *RefusedError), unless
// Config.Allow names it. Then, per figure both sides have, Welch's t-test
// on the unit values gives the difference of the means with its
// Welch–Satterthwaite interval and the relative change (B − A)/A with
// Fieller's interval for the ratio of the means; Holm's step-down
// procedure over every figure tested sets the verdicts, so that two runs
// of the same thing get a "better" or "worse" anywhere with probability
// at most Alpha (1 % by default). With Config.Threshold, a figure whose verdict is
// worse and whose relative change exceeds the threshold is a regression
// (Result.Regressions); examples/compare exits cli.ExitRegression (4).
//
// docs/COMPARE.md gives the method, its choices and its limits.
package compare
