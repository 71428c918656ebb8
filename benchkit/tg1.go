package benchkit

// tg1Note says why a run whose every request generates one token has no
// TPOT, ITL or generation rate: with one token there is no time between
// tokens, so those figures are null in the results and "—" or "-" in the
// tables, never 0. A summary whose every request asked for one token has
// it among its warnings, and so has a Plan with tg=1.
const tg1Note = "tg=1: TPOT, ITL and the generation rate are undefined (null, shown as \"-\"): a reply of one token has no time between tokens"
