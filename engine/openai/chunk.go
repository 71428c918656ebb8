package openai

import (
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/chunkjson"
	"github.com/inferbench/inferbench/timing"
)

// chunkView is what scan uses of one chunk: parsedChunk with byte slices
// that are valid until the next decode.
type chunkView struct {
	id, model, finish []byte
	// The generated text of choice 0 by kind: its reasoning
	// (reasoning_content, or reasoning), its content (a completion's
	// text) and its tool calls (each call's function name and arguments).
	reasoning, content, tool []byte
	usage                    *engine.Usage
	choice                   bool // the chunk had a choice of index 0
}

// parts returns the chunk's generated text by kind, in the order the
// server generated it: reasoning, then content, then tool calls. A kind
// without text is left out.
func (v *chunkView) parts(out []chunkPart) []chunkPart {
	out = out[:0]
	for _, p := range [...]chunkPart{{timing.Reasoning, v.reasoning}, {timing.Answer, v.content}, {timing.ToolCall, v.tool}} {
		if len(p.text) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// A chunkPart is the text of one kind in a server's chunk.
type chunkPart struct {
	kind timing.ChunkKind
	text []byte
}

// chunkDecoder decodes stream chunks, reusing its buffers: the common
// shape goes through chunkjson without allocating, anything else (error
// objects, several choices, tool calls, unusual JSON) through parseChunk.
type chunkDecoder struct {
	fast  chunkjson.Chunk
	usage engine.Usage
}

// decode decodes data into v, a text_completion chunk when completion is
// set, with parseChunk's errors.
func (d *chunkDecoder) decode(data []byte, v *chunkView, completion bool) error {
	*v = chunkView{}
	f := &d.fast
	if !f.Parse(data) {
		p, err := parseChunk(data, completion)
		if err != nil {
			return err
		}
		*v = chunkView{id: []byte(p.ID), model: []byte(p.Model), finish: []byte(p.FinishReason),
			reasoning: []byte(p.Reasoning), content: []byte(p.Content), tool: []byte(p.Tool), usage: p.Usage, choice: p.Choice}
		return nil
	}
	v.id, v.model = f.ID.Val, f.Model.Val
	if f.Choices == 1 && f.Index == 0 {
		v.choice = true
		v.finish = f.FinishReason.Val
		if completion {
			v.content = f.Text.Val
			return d.fastUsage(v)
		}
		// deltaWire.reasoning: reasoning_content when it has text, else
		// reasoning.
		switch {
		case f.Delta.ReasoningContent.Set && len(f.Delta.ReasoningContent.Val) > 0:
			v.reasoning = f.Delta.ReasoningContent.Val
		case f.Delta.Reasoning.Set:
			v.reasoning = f.Delta.Reasoning.Val
		}
		v.content = f.Delta.Content.Val
	}
	return d.fastUsage(v)
}

// fastUsage sets v's usage from the chunk the fast parser decoded.
func (d *chunkDecoder) fastUsage(v *chunkView) error {
	f := &d.fast
	if f.UsageSet {
		d.usage = engine.Usage{PromptTokens: f.Usage.PromptTokens, CompletionTokens: f.Usage.CompletionTokens,
			TotalTokens: f.Usage.TotalTokens}
		// Their own ints: a kept usage must not change with the next chunk.
		if f.Usage.CachedSet {
			n := f.Usage.CachedTokens
			d.usage.CachedTokens = &n
		}
		if f.Usage.ReasoningSet {
			n := f.Usage.ReasoningTokens
			d.usage.ReasoningTokens = &n
		}
		v.usage = &d.usage
	}
	return nil
}
