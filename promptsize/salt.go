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

// RunSalt returns the salt of request i of run run under nonce: the
// nonce, "." and run in base 36, then Salt(i), e.g. "k3f9x2ab.0#1F".
// Every (nonce, run, i) gives a distinct salt, so a sweep's runs never
// resend each other's prompts. An empty nonce gives Salt(i) alone.
func RunSalt(nonce string, run, i int) string {
	if nonce == "" {
		return Salt(i)
	}
	return nonce + "." + strconv.FormatInt(int64(run), 36) + Salt(i)
}
