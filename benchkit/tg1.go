package benchkit

// TG1Note says why a run whose every request generates one token has no
// TPOT, ITL or generation rate: with one token there is no time between
// tokens, so those figures are null in the results and "—" or "-" in the
// tables, never 0. serve-load and offline print it and add it to the
// results' warnings when their longest reply is one token; a Plan with
// tg=1 has it among its Warnings, which exo-bench prints and records.
// prefill-decode refuses tg=1: its decode phase is measured by the
// generation rate (disagg.CheckPlan).
const TG1Note = "tg=1: TPOT, ITL and the generation rate are undefined (null, shown as \"-\"): a reply of one token has no time between tokens"
