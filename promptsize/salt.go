package promptsize

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"strings"
)

// NonceLen is the length of a run nonce made by NewNonce.
const NonceLen = 8

// NewNonce returns a run nonce: NonceLen lower-case base-36 characters
// drawn from src, or from the operating system's random source when src
// is nil. Put it in every salt of a run (RunSalt) so that no request of
// one invocation shares a prefix, beyond the chat template, with any
// request of another: an engine's automatic prefix cache then serves
// nothing from an earlier run. Seed src to reproduce a run's prompts.
func NewNonce(src rand.Source) string {
	if src == nil {
		var b [16]byte
		_, _ = crand.Read(b[:]) // never fails on supported platforms
		src = rand.NewPCG(binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:]))
	}
	r := rand.New(src)
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	var sb strings.Builder
	// The first character is a letter, so that a tokenizer never reads the
	// nonce's start as part of a number.
	sb.WriteByte(digits[10+r.IntN(26)])
	for range NonceLen - 1 {
		sb.WriteByte(digits[r.IntN(len(digits))])
	}
	return sb.String()
}

// RunSalt returns the salt of request i of run run under nonce: Salt(i),
// then run in base 36, "." and the nonce, e.g. "51#0.k3f9x2ab". Every
// (nonce, run, i) gives a distinct salt, so a sweep's runs never resend
// each other's prompts, and no two invocations share one. The request's
// own part comes first, so that the prompts of a run differ from their
// first content token (see Salt): the nonce, the same in every prompt of
// the run, would otherwise open each with the same tokens, which a cache
// that reuses any common token prefix (llama.cpp's) serves to every
// request. An empty nonce gives Salt(i) alone.
func RunSalt(nonce string, run, i int) string {
	if nonce == "" {
		return Salt(i)
	}
	return Salt(i) + strconv.FormatInt(int64(run), 36) + "." + nonce
}
