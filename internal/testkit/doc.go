// Package testkit holds what the module's tests share and nothing else
// imports:
//
//   - Bounded waits. Every wait in a test has a bound, so that a test
//     that goes wrong fails with a message instead of hanging the suite
//     until go test's own timeout: RecvWithin takes a value from a
//     channel, SendWithin gives one, WaitWithin waits for a sync.WaitGroup (or anything with a
//     Wait method), DoneWithin for a function to return, each failing the
//     test after the given time. Patience is a bound generous enough for
//     a loaded two-core machine running the race detector.
//     TestTestWaitsBounded scans every *_test.go file of the module and
//     fails on a wait with no bound; a wait that is bounded some other way
//     says why on its line (or the line above) with a "// bounded: reason"
//     comment.
//   - Data beside the repository. Public data the tests read (vendor chat
//     templates) is not committed: it lives in ../shared/data from the
//     repository root (RepoRoot walks up to go.mod), or wherever
//     $INFERBENCH_SHARED_DATA says. SharedData returns one of its folders
//     and MissingData skips a test whose data is absent, or fails it under
//     CI=true, as the tokenizer parity tests do for the files
//     scripts/testdata.sh fetches.
package testkit
