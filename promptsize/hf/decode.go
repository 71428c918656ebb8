package hf

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// byteToRune is GPT-2's byte-level alphabet: every byte has a printable
// stand-in character. Printable Latin-1 bytes stand for themselves; the
// others (controls, space, 0x7F-0xA0, 0xAD) take 256, 257, ... in byte
// order. It is filled once and only read.
var byteToRune, runeToByte = byteLevelTables()

func byteLevelTables() (b2r [256]rune, r2b map[rune]byte) {
	r2b = make(map[rune]byte, 256)
	n := rune(0)
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			b2r[b] = rune(b)
		} else {
			b2r[b] = 256 + n
			n++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}

// byteLevelDecode maps a byte-level token back to the bytes it stands for;
// ok is false when a character is outside the byte-level alphabet.
func byteLevelDecode(tok string) (string, bool) {
	var b strings.Builder
	b.Grow(len(tok))
	for _, r := range tok {
		c, ok := runeToByte[r]
		if !ok {
			return "", false
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

// decoder turns ids back into text. Each id's text is computed at load:
// the decoders of tokenizer.json that work token by token (ByteLevel,
// Replace) are applied then, and ByteFallback's <0xNN> tokens are joined
// into bytes when decoding.
type decoder struct {
	text     []string // per id; "" for unused ids
	byteOf   []int16  // per id: the byte of a <0xNN> token when ByteFallback applies, else -1
	fallback bool
}

const supportedDecoders = "ByteLevel, or a Sequence of Replace (String pattern), then ByteFallback, then Fuse"

func buildDecoder(raw json.RawMessage, vocab map[string]int, added []addedTokenSpec, byteLevel bool) (decoder, error) {
	var replaces [][2]string
	var isByteLevel, fallback bool
	if !isNull(raw) {
		c, err := parseComponent(raw, "decoder")
		if err != nil {
			return decoder{}, err
		}
		steps := []componentSpec{c}
		if c.Type == "Sequence" {
			steps = steps[:0]
			for i, sub := range c.Decoders {
				s, err := parseComponent(sub, fmt.Sprintf("decoder.decoders[%d]", i))
				if err != nil {
					return decoder{}, err
				}
				steps = append(steps, s)
			}
		}
		stage := 0 // 0: Replace allowed, 1: after ByteFallback, 2: after Fuse
		for i, s := range steps {
			path := fmt.Sprintf("decoder.decoders[%d]", i)
			switch {
			case s.Type == "ByteLevel" && len(steps) == 1:
				isByteLevel = true
			case s.Type == "Replace" && stage == 0:
				if s.Pattern == nil || s.Pattern.String == nil || *s.Pattern.String == "" || s.Content == nil {
					return decoder{}, unsupported(path, "Replace decoder without a String pattern", supportedDecoders)
				}
				replaces = append(replaces, [2]string{*s.Pattern.String, *s.Content})
			case s.Type == "ByteFallback" && stage == 0:
				fallback, stage = true, 1
			case s.Type == "Fuse" && stage < 2:
				stage = 2
			default:
				return decoder{}, unsupported(path, fmt.Sprintf("decoder %q at this position", s.Type), supportedDecoders)
			}
		}
	}
	if isByteLevel != byteLevel {
		return decoder{}, unsupported("decoder", fmt.Sprintf("a ByteLevel decoder (%v) that does not match the ByteLevel pre-tokenizer (%v)", isByteLevel, byteLevel), supportedDecoders)
	}
	size := 0
	for _, id := range vocab {
		size = max(size, id+1)
	}
	for _, a := range added {
		size = max(size, a.ID+1)
	}
	d := decoder{text: make([]string, size), byteOf: make([]int16, size), fallback: fallback}
	for i := range d.byteOf {
		d.byteOf[i] = -1
	}
	set := func(tok string, id int) {
		if isByteLevel {
			// Hugging Face maps a token that is not all byte-level
			// characters (an added token, typically) to its own bytes.
			if raw, ok := byteLevelDecode(tok); ok {
				tok = raw
			}
		}
		for _, r := range replaces {
			tok = strings.ReplaceAll(tok, r[0], r[1])
		}
		d.text[id] = tok
		if fallback && len(tok) == 6 && strings.HasPrefix(tok, "<0x") && tok[5] == '>' {
			if b, err := strconv.ParseUint(tok[3:5], 16, 8); err == nil {
				d.byteOf[id] = int16(b)
			}
		}
	}
	for tok, id := range vocab {
		set(tok, id)
	}
	for _, a := range added {
		set(a.Content, a.ID)
	}
	return d, nil
}

func (d *decoder) decode(ids []int) string {
	var b strings.Builder
	var pending []byte // bytes of consecutive <0xNN> tokens
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if utf8.Valid(pending) {
			b.Write(pending)
		} else {
			// Hugging Face's ByteFallback gives one U+FFFD per byte of an
			// invalid run.
			for range pending {
				b.WriteString("\uFFFD")
			}
		}
		pending = pending[:0]
	}
	for _, id := range ids {
		if id < 0 || id >= len(d.text) {
			continue
		}
		if d.fallback && d.byteOf[id] >= 0 {
			pending = append(pending, byte(d.byteOf[id]))
			continue
		}
		flush()
		b.WriteString(d.text[id])
	}
	flush()
	return b.String()
}
