// Package httpsafe holds the rules every HTTP client of inferbench keeps
// with a server it does not trust:
//
//   - Secrets never leave. Redact removes a credential from any text a
//     server sent back before it is kept or printed: as sent, and in every
//     escaped form a server may echo it in (JSON's \/ and \uXXXX, percent
//     encoding, \xHH, HTML character references), nested up to twice.
//     RedactError does the same to an error's text and keeps its chain.
//   - Redirects are not followed blindly. NoRedirects (the benchmark path)
//     refuses every redirect; SameOrigin (the control plane) follows one
//     only to the same scheme, host and port, so that a credential is never
//     sent to another origin. A refused redirect is a *RedirectError,
//     which wraps an *engine.StatusError, so a row names it with kind
//     status.
//   - Waits are bounded. Backoff caps a server's Retry-After at
//     MaxRetryAfter, and RetryAfterExceedsDeadline tells a retry policy to
//     give up at once when even the capped wait would outlast the call's
//     context.
package httpsafe
