// Command multi-turn measures multi-turn chat sessions (benchkit.Sessions):
// each session sends --turns turns, every turn after its previous reply
// (and --think), its history — the shared system prompt, the earlier user
// messages and the server's own replies — sent again with --user-tokens
// new tokens, every prompt exact after the chat template and checked
// against the server's usage.prompt_tokens. It prints, per turn index,
// TTFT, the prompt and new tokens, the server's cached tokens and the
// measured prefix hit rate (Σ cached / Σ prompt) beside the theoretical
// one (history / prompt).
//
// With no --base-url it runs the embedded simulated engine (preset
// h100-llama3.1-8b-bf16 unless --sim-preset) twice, its prefix cache on
// (radix) and off (naive), and sets their TTFT per turn side by side with
// the ratio: with the cache on a late turn's TTFT stays near the first's,
// with it off TTFT rises with the history. Every figure it prints is then
// simulated. --prefix-cache radix or naive runs one of them only.
//
//	multi-turn --base-url http://127.0.0.1:8000 --sessions 16 --max-active 8 --turns 5 \
//	    --user-tokens 512 --output-len 64 --think 1s
//
// --predict computes the synthetic sessions on the embedded engine's
// virtual clock instead of sending them (benchkit/predict), in a fraction
// of their time: the tables and the document are labelled predicted
// (docs/PREDICT.md).
//
// Each request names its session in the X-Session-ID header (--session-header;
// "-" sends none) for routers that keep a session on one replica. A session
// whose turn fails stops there: its later turns are rows of kind not_sent
// with the reason, and the other sessions go on.
//
// --thinking on|off, --reasoning-effort low|medium|high and
// --thinking-budget N put a reasoning model's thinking controls on every
// turn, every turn's prompt counted with the chat template rendered under
// them, every row labelled with the setting.
//
// --json-out (results/multi-turn.json; "" for none) writes the results
// document (benchkit.SessionsDocument) as every program writes its own
// (cli.WriteResults): the run's settings and target, and for each run of
// the sessions (each cache mode) its summary, one summary per turn with
// the measured and theoretical hit rates, and every row. It is locked for
// the run, and the previous one removed when the run starts. --jsonl
// writes every row as its turn ends. --plot draws TTFT by turn.
//
// --html FILE writes the same document as one self-contained HTML page
// (package benchkit/report): the sessions' settings, TTFT by turn of
// every run as an inline plot, each run's figures by turn (TTFT, TPOT and
// E2E p50 with their intervals, the tokens sent and cached, the hit
// rates), its latency over every turn, its warnings and a per-request
// timeline. The page fetches nothing. Like --json-out it is claimed when
// the run starts and written whole at the end (docs/REPORT.md).
//
// Exit status: 0 when every turn succeeded and every prompt count matched
// the server's, 1 otherwise, 2 for a bad flag, 130 when interrupted.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/inferbench/inferbench/benchkit/cli"
)

func main() {
	ctx, stop := cli.NotifyContext(context.Background(), "multi-turn", os.Stderr)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "multi-turn:", err)
	}
	os.Exit(cli.ExitCode(err))
}
