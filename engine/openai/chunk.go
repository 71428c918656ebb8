package openai

import (
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/chunkjson"
)

// chunkView is what scan uses of one chunk: parsedChunk with byte slices
// that are valid until the next decode.
type chunkView struct {
	id, model, text, finish []byte
	usage                   *engine.Usage
	choice                  bool // the chunk had a choice of index 0
}

// chunkDecoder decodes stream chunks, reusing its buffers: the common
// shape goes through chunkjson without allocating, anything else (error
// objects, several choices, unusual JSON) through parseChunk.
type chunkDecoder struct {
	fast  chunkjson.Chunk
	usage engine.Usage
	text  []byte
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
		*v = chunkView{id: []byte(p.ID), model: []byte(p.Model), text: []byte(p.Text), finish: []byte(p.FinishReason), usage: p.Usage, choice: p.Choice}
		return nil
	}
	v.id, v.model = f.ID.Val, f.Model.Val
	if f.Choices == 1 && f.Index == 0 {
		v.choice = true
		v.finish = f.FinishReason.Val
		if completion {
			v.text = f.Text.Val
			return d.fastUsage(v)
		}
		// deltaWire.text: the reasoning, then the content.
		d.text = d.text[:0]
		switch {
		case f.Delta.ReasoningContent.Set && len(f.Delta.ReasoningContent.Val) > 0:
			d.text = append(d.text, f.Delta.ReasoningContent.Val...)
		case f.Delta.Reasoning.Set:
			d.text = append(d.text, f.Delta.Reasoning.Val...)
		}
		d.text = append(d.text, f.Delta.Content.Val...)
		v.text = d.text
	}
	return d.fastUsage(v)
}

// fastUsage sets v's usage from the chunk the fast parser decoded.
func (d *chunkDecoder) fastUsage(v *chunkView) error {
	f := &d.fast
	if f.UsageSet {
		d.usage = engine.Usage{PromptTokens: f.Usage.PromptTokens, CompletionTokens: f.Usage.CompletionTokens,
			TotalTokens: f.Usage.TotalTokens}
		if f.Usage.CachedSet {
			// Its own int: a kept usage must not change with the next chunk.
			n := f.Usage.CachedTokens
			d.usage.CachedTokens = &n
		}
		v.usage = &d.usage
	}
	return nil
}
