package exo

import (
	"encoding/json"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/chunkjson"
	"github.com/inferbench/inferbench/timing"
)

// streamChunk is what readStream uses of one streamed chunk. Its byte
// slices are valid until the next decode.
type streamChunk struct {
	id, model    []byte
	choices      int
	content      []byte // choice 0's delta.content
	hasContent   bool   // delta.content was a string
	reasoning    []byte // choice 0's delta.reasoning_content (a thinking token's)
	hasReasoning bool   // delta.reasoning_content was a string
	tool         []byte // choice 0's delta.tool_calls: each call's name and arguments
	finish       []byte // choice 0's finish_reason
	hasFinish    bool   // finish_reason was a string
	usage        *engine.Usage
}

// kind returns what the chunk carried: a tool call (exo's ToolCallChunk),
// a thinking token (TokenChunk.is_thinking, sent as reasoning_content) or
// the answer.
func (ck *streamChunk) kind() timing.ChunkKind {
	switch {
	case len(ck.tool) > 0:
		return timing.ToolCall
	case ck.hasReasoning && len(ck.content) == 0:
		return timing.Reasoning
	}
	return timing.Answer
}

// chunkDecoder decodes streamed chunks, reusing its buffers: the common
// shape goes through chunkjson without allocating, anything else through
// encoding/json into completionWire.
type chunkDecoder struct {
	fast  chunkjson.Chunk
	usage engine.Usage
}

// decode decodes data into ck; the error is encoding/json's.
func (d *chunkDecoder) decode(data []byte, ck *streamChunk) error {
	*ck = streamChunk{}
	if f := &d.fast; f.Parse(data) {
		ck.id, ck.model, ck.choices = f.ID.Val, f.Model.Val, f.Choices
		if f.Choices > 0 {
			ck.content, ck.hasContent = f.Delta.Content.Val, f.DeltaSet && f.Delta.Content.Set
			ck.reasoning, ck.hasReasoning = f.Delta.ReasoningContent.Val, f.DeltaSet && f.Delta.ReasoningContent.Set
			ck.finish, ck.hasFinish = f.FinishReason.Val, f.FinishReason.Set
		}
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
			ck.usage = &d.usage
		}
		return nil
	}
	var w completionWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	ck.id, ck.model, ck.choices, ck.usage = []byte(w.ID), []byte(w.Model), len(w.Choices), w.Usage
	if len(w.Choices) > 0 {
		ch := w.Choices[0]
		if ch.Delta != nil && ch.Delta.Content != nil {
			ck.content, ck.hasContent = []byte(*ch.Delta.Content), true
		}
		if ch.Delta != nil && ch.Delta.ReasoningContent != nil {
			ck.reasoning, ck.hasReasoning = []byte(*ch.Delta.ReasoningContent), true
		}
		if ch.Delta != nil {
			for _, tc := range ch.Delta.ToolCalls {
				ck.tool = append(ck.tool, tc.Function.Name...)
				ck.tool = append(ck.tool, tc.Function.Arguments...)
			}
		}
		if ch.FinishReason != nil {
			ck.finish, ck.hasFinish = []byte(*ch.FinishReason), true
		}
	}
	return nil
}
