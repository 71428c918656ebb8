// Package sim is an embedded reference inference engine: a real HTTP server
// on loopback that speaks exo's API, the OpenAI API as vLLM serves it and
// Ollama's native API, or behaves as llama.cpp's llama-server (the
// LlamaCpp profile), with timing from a roofline cost model of a model on
// a machine. It is the default target of the example programs and a
// test double for anyone's harness: sim.NewServer works like
// httptest.NewServer.
//
//	s := sim.NewServer(sim.Options{Preset: sim.Fast()})
//	defer s.Close()
//	// POST s.URL + "/bench/chat/completions" with model s.Model()
//
// Every figure the sim returns is simulated, and says so: each response
// carries the header X-Inferbench-Sim ("simulated; preset=<name>"), model
// ids start with "sim/", node names read "sim-node-N (simulated <chip>)",
// and bench responses add a "sim" block (a ": sim" comment line when
// streaming) with the request's schedule.
//
// # Endpoints
//
// exo's API, on Server.URL (shapes, casing and tagged unions as in exo):
//
//	POST   /bench/chat/completions   bench: EOS banned (exactly max_tokens tokens), raw text,
//	                                 prefix cache off unless use_prefix_cache; JSON with
//	                                 generation_stats ({"inBytes"}) and power_usage, or SSE
//	POST   /v1/chat/completions      EOS allowed (requests end early, see below), prefix cache on;
//	                                 JSON carries usage (no generation_stats, no power_usage)
//	GET    /models, /v1/models       the preset's model and custom cards; ?status=downloaded keeps
//	                                 those some node has a DownloadCompleted of
//	POST   /models/add               {"model_id"}: a custom card with the preset model's shape
//	GET    /state, /state/{path...}  instances, runners, downloads, tasks, topology, nodeIdentities,
//	                                 nodeMemory, nodeDisk, nodeSystem, instanceLinks, ...
//	GET    /instance/previews        ?model_id=: placements (Pipeline|Tensor × MlxRing|MlxJaccl × 1..N nodes)
//	POST   /instance                 {"instance": <tagged>}: loading for Options.LoadDelay, then ready
//	GET    /instance/{id}, DELETE /instance/{id}
//	POST   /place_instance           {"model_id","sharding","instance_meta","min_nodes"}: the smallest
//	                                 placement that fits, created server-side (no id in the answer)
//	GET    /instance/placement       same query: the instance that placement would create, not created
//	POST   /download/start           {"targetNodeId","shardMetadata"} (strict, either casing): a node
//	                                 without the model downloads it for Options.LoadDelay; a node that
//	                                 has it (or is downloading it) ignores the command, as exo's does
//	POST   /download/cancel          {"targetNodeId","modelId"}: an ongoing download becomes pending
//	DELETE /download/{node}/{model}  the node's copy is deleted
//	GET    /v1/instance-links, POST, PUT /{id}, DELETE /{id}   prefill/decode links
//	POST   /v1/cancel/{command_id}   cancels a running request
//	GET    /v1/feature-flags, GET /node_id
//	POST   /tokenize                 vLLM's shape, for counting (a sim addition)
//	GET    /metrics                  Prometheus text 0.0.4 (see Metrics), also on /vllm/metrics
//
// The OpenAI API as vLLM serves it, on Server.VLLMURL (URL + "/vllm"):
// POST /v1/chat/completions with stream_options.include_usage (a final chunk
// with empty choices and usage) and continuous_usage_stats (usage on every
// chunk), ignore_eos, min_tokens, max_tokens or max_completion_tokens
// (default: context length − prompt), cache_salt; chunks are
// "chat.completion.chunk" and the first carries the role; POST
// /v1/completions with the same fields and a prompt that is a string or a
// list of token ids (a list of one such prompt too; the sim serves one
// prompt a request), max_tokens defaulting to vLLM's 16, chunks
// "text_completion" with choices[].text and no role chunk (vLLM's
// serving_completion.py); GET /v1/models; POST /tokenize with {model,
// messages, add_generation_prompt} or {model, prompt} → {count,
// max_model_len, tokens}; GET /health. Both report
// usage.prompt_tokens_details.cached_tokens as vLLM does with
// --enable-prompt-tokens-details: on the final usage (the usage chunk of a
// stream, the body of a whole answer), for a completion always, for a chat
// only when something was cached; Options.NoPromptTokensDetails leaves it
// out, as vLLM's default does.
//
// Ollama's native API as v0.6.5 writes it, on Server.OllamaURL (URL +
// "/ollama"): POST /api/chat (api.ChatRequest: model with or without
// ":latest", messages, stream, which defaults to true, and options
// num_predict, seed and stop), GET /api/tags (each model with an instance,
// as "<id>:latest") and GET /api/version ({"version":"0.6.5"}). A stream
// is application/x-ndjson, one api.ChatResponse line per token with text
// (per Options.StreamChunk tokens, which stands for text Ollama holds
// back), then the final object with done_reason "stop" or "length" and
// prompt_eval_count, eval_count and the durations (ns) from the
// request's schedule: load_duration from the handler's start to the
// instance being ready, prompt_eval_duration from admission to the first
// token, eval_duration from the first token to the last, total_duration
// the whole. There is no ignore_eos: a request ends at num_predict or at
// its natural length, whose last token is the end of sequence, counted in
// eval_count and never sent. Errors are Ollama's {"error": "..."}: 404
// "model \"<name>\" not found, try pulling it first", 400 "model is
// required", a line {"error": ...} after the 200; a request without
// messages gets done_reason "load".
//
// A stream on exo's API is, in order: ": keep-alive" (again after every
// Options.KeepAlive of silence, 10 s by default); ": prefill_progress
// {"PrefillProgressChunk":{...}}" per prefill chunk; one "data:" chunk per
// token (object "chat.completion", every delta repeats the role), the last
// with finish_reason and usage; ": generation_stats {...}" (snake_case,
// "in_bytes"); ": sim {...}"; "data: [DONE]". A runner error after the 200
// is "data: {"error":{...}}" then "data: [DONE]". Errors before the 200 use
// exo's envelope {"error":{"message","type","param","code"}}; body validation
// failures FastAPI's 422 {"detail":[...]}. An unknown model is 404 "No
// instance found for model <id>" (vLLM: "The model `<id>` does not exist.").
//
// # Cost model
//
// Every duration comes from these formulas, with W = Params · BitsPerWeight
// / 8 (weight bytes), kv = 2 · Layers · KVHeads · HeadDim · KVBytesPerElement
// (bytes per cached token), a = 4 · Layers · Heads · HeadDim (attention
// FLOPs per query-key pair), N = active parameters, B = MemoryBandwidth ·
// MemoryEfficiency and F = FLOPS · ComputeEfficiency:
//
//	decode step (batch of b requests holding c_i tokens each):
//	    t = max((W + kv · Σ c_i) / B, 2 · N · b / F) + StepOverhead
//	prefill chunk (n tokens after o cached ones):
//	    t = max((W + kv · o) / B, (2 · N · n + a · (n · o + n(n+1)/2)) / F) + StepOverhead
//	prefill of p tokens: the sum over chunks of PrefillChunk (default 4096) tokens
//
// An instance on k > 1 nodes: tensor parallel divides the roofline term by k
// and adds 2 · Layers hops per step; pipeline parallel keeps it and adds
// k − 1 hops (hop = RingLatency for MlxRing, RDMALatency for MlxJaccl).
//
// Each instance runs a scheduler goroutine that advances its schedule step
// by step and sleeps each computed duration, so concurrent requests really
// batch. At each step boundary it admits queued requests while fewer than
// MaxRunning (exo's default 8) run; each admitted request is prefilled at
// once, chunk by chunk, while the running batch stalls (as in exo's batch
// generator); then one decode step gives every running request one token.
// A request's instants (arrival, prefill, each token) are instants of this
// schedule, not readings of the machine's clock, so the reported rates are
// exact even on a loaded machine. A request arrives when its handler
// queues it: an idle instance starts work at its first request's arrival,
// and one that comes during a step arrives at an instant of that step (or
// just after the boundary the scheduler last took its queue at, and never
// before a request queued ahead of it) and is admitted at the step's end;
// so the schedule is a function of the
// arrival instants and their order alone, which Predict runs on a virtual
// clock (see Prediction). The rates:
//
//	prompt_tps     = (u − 1) / prefill seconds     u = uncached prompt tokens (exo prefills all but the last)
//	generation_tps = (n − 1) / (t_last − t_first)   n = generated tokens, t = decode step ends
//	peak_memory_usage = (W + kv · most KV tokens held) / k · 1.073741824   (rank 0's share, exo's from_gb scale)
//
// A prompt's cached tokens are not prefilled (see Prefix cache): the
// prefill is of its u = prompt − cached tokens, after cached ones.
//
// Remote prefill: when an instance link names the serving instance as decode
// and a ready instance as prefill, a prompt with more than 1000 uncached
// tokens is prefilled on the prefill instance, then its KV cache
// (kv · uncached bytes) crosses at KVTransferBandwidth before decoding; its
// prompt_tps is (u − 1) / (prefill + transfer seconds).
//
// Power per node is IdleWatts + ComputeWatts · uc + MemoryWatts · um, where
// uc and um are the fractions of each step the compute and memory terms
// fill (on a k-node instance each node carries 1/k of both terms).
// power_usage integrates it exactly over the request (arrival to last
// token) for every node of the cluster, split at the first token; samples
// is the count exo's 1 Hz sampler would have taken. /state/nodeSystem
// reports the last second: sysPower (mean W), gpuUsage (mean max(uc, um)),
// temp = 35 + 45 · gpuUsage °C, pcpuUsage = 0.03 + 0.1 · gpuUsage,
// ecpuUsage = 0.05.
//
// # Prefix cache
//
// Options.PrefixCache is the ablation switch: PrefixCacheRadix, the
// default (vLLM's v1 engine caches prefixes by default, as SGLang's radix
// cache does), or PrefixCacheNaive, where nothing is reused on either API.
// Server.CacheStats is the sim's own account of prompt work, for checking
// what clients add up from cached_tokens.
//
// The vLLM API keeps a block cache per instance, as vLLM's automatic
// prefix caching does. A prompt's token identities are cut into blocks of
// Options.BlockSize tokens (vLLM's default 16); a full block is named by a
// chained hash, FNV-1a of its parent block's hash and its own ids (the
// first block's parent is the request's cache_salt), so equal hashes are
// equal prefixes and the set of hashes is a radix tree of cached prefixes
// with blocks for edges. A request's hit is the longest run of its leading
// blocks that is cached, and stops short of its last prompt token, which
// must be computed for the first token's logits: ⌊(prompt − 1) / block⌋
// blocks at most, so a prompt cached whole still prefills its last block.
// Blocks are cached as their KV is computed: the prompt's (all of it but
// the last token) when its prefill ends, then one token a decode step, so
// a reply's blocks are hits for a follow-up prompt that repeats it. A
// request may hit only blocks computed before its own prefill starts. The
// scheduler prefills admitted requests one after another, each looked up
// just before its prefill, so of requests that arrive together the later
// ones hit the blocks of the earlier ones (as in vLLM, which commits a
// block's hash when it schedules its computation, and batches both in one
// step), and a burst of n prompts sharing a prefix prefills it once. A
// block prefilled on a remote prefill instance becomes a hit on the decode
// instance once its KV has arrived.
//
// Token identities: a completion's token ids are their own, exactly;
// chat messages and text are the built-in tokenizer's ids (templateIDs),
// exact when the server counts with the built-in Counter. With a caller's
// Options.Counter the hit is scaled from identities to that count and
// rounded down to whole blocks.
//
// Memory: each instance holds Options.KVCacheBlocks blocks (default
// Preset.KVCacheBlocks: 90% of the instance's memory, vLLM's
// --gpu-memory-utilization, less the weights). Running requests hold their
// blocks (shared blocks once); a finished request's blocks stay cached,
// last block first in line for eviction, and cached blocks no request
// holds are evicted least recently freed first when the blocks in memory
// exceed the budget. Held blocks are never evicted: running requests whose
// KV alone exceeds the budget overcommit it (no preemption is modelled).
//
// exo's API keeps exo's KVPrefixCache, whose unit is a whole prompt, not
// a block (exo-api.md §1.7): bench requests skip it unless
// use_prefix_cache; the longest common token prefix with a cached prompt
// gives an exact hit when it covers all but at most the last token (no
// prefill; prompt_tps is the rate stored with the entry), a partial hit when
// it is non-empty (only the rest is prefilled), none otherwise. An entry is
// updated in place when the hit is at least max(1000, system-prompt tokens)
// and half the prompt, else a new one is added (32 at most per instance).
// The two caches are separate: exo's requests take no blocks.
//
// # Presets
//
// Computed from the formulas above (decode at 1024 tokens of context;
// prefill of 4096 tokens on a cold cache); TestPresetTable keeps this table
// equal to what the code computes.
//
// Generated presets table:
//
//	preset                     hardware                                       model                             weights  decode b=1   decode b=8 (per request, total)   prefill 4096
//	m3-ultra-gemma3-27b-4bit   Apple M3 Ultra (80-core GPU, 819 GB/s)         sim/gemma-3-27b-it-4bit           15.4 GB  34.7 tok/s   28.5 tok/s, 227.7 tok/s           299.6 tok/s
//	m4-max-llama3.1-8b-4bit    Apple M4 Max (40-core GPU, 546 GB/s)           sim/Llama-3.1-8B-Instruct-4bit    4.5 GB   75.9 tok/s   64.0 tok/s, 511.9 tok/s           644.2 tok/s
//	h100-llama3.1-8b-bf16      NVIDIA H100 SXM (3.35 TB/s, 989 TFLOPS bf16)   sim/Llama-3.1-8B-Instruct-bf16    16.1 GB  157.7 tok/s  149.4 tok/s, 1195.2 tok/s         28799.9 tok/s
//	fast                       test machine (1 TB/s, 1 PFLOPS)                sim/tiny-1b-8bit                  1.0 GB   944.8 tok/s  895.2 tok/s, 7161.3 tok/s         480923.6 tok/s
//
// (End of the generated table.)
//
// # Tokens and text
//
// Without Options.Counter the sim counts with its built-in tokenizer and
// chat template (see Tokenize and Counter): a token is optional whitespace
// plus a run of up to 12 letters and digits or one other character, and a
// request counts 3 + Σ (5 + tokens of each message) tokens. Counter and
// Server.Counter give clients the same count without HTTP. With
// Options.Counter (a real tokenizer), prompt_tokens are that Counter's
// count; the prefix cache then scales the built-in match to that count.
//
// Generated text is words from a fixed vocabulary, one token each under the
// built-in tokenizer, chosen by the request's seed (default 42). Requests
// with EOS allowed (exo's /v1, vLLM without ignore_eos) end by themselves
// after L = 1 + splitmix64(FNV-1a(prompt ids) xor seed) mod NaturalLength
// tokens (finish_reason "stop") when L < max_tokens, so some requests end
// early, always the same ones. vLLM's min_tokens raises L.
//
// stop is honoured, in bench mode too as exo does: generation ends with the
// token that completes the first stop string (finish_reason "stop"), and the
// text ends where that string starts.
//
// A request cancelled through /v1/cancel ends: a stream with the tokens so
// far and "data: [DONE]" (no generation_stats); a JSON response with
// finish_reason "stop" and generation_stats null.
//
// # Faults
//
// Options.Fault (optionally every FaultEvery-th chat or completion request)
// or the request header X-Sim-Fault (e.g. "reset-mid-stream; after=3", see
// ParseFault) injects one fault per such request, so one run can mix them. After counts
// data chunks written before a mid-stream fault fires (default 1).
//
//	500, 503              error envelope with that status, before any work
//	reset-before-headers  the connection is reset (TCP RST) before any byte
//	reset-mid-stream      RST after After chunks (JSON: after After tokens, with the start of a body written)
//	cut-without-done      the stream ends cleanly after After chunks with no [DONE] (JSON: half the body)
//	malformed-chunk       a data: line of broken JSON before chunk After+1, then the stream goes on
//	                      (JSON: a corrupted body)
//	error-event           data: {"error":{...,"code":500}} and [DONE] after After chunks (JSON: 500)
//	stall                 no bytes for Duration (default 30 s) after After chunks, then the rest
//	                      (JSON: the body Duration late); ends early if the client leaves
//	slow-drip             every write goes out in 8-byte pieces Duration (default 1 ms) apart
//	wrong-content-type    200 text/html with a dashboard page instead of the response
//	oversized-line        a data: line of Size bytes (default 2 MiB) of content after After chunks
//	                      (JSON: a "padding" field of Size bytes)
//	unknown-model         404 with the dialect's unknown-model envelope
//	empty-body            200 application/json with Content-Length 0
//
// # Metrics
//
// GET /metrics and GET /vllm/metrics serve the server's own view in the
// Prometheus text format 0.0.4 ("text/plain; version=0.0.4;
// charset=utf-8"), from the schedule itself, so a benchmark can window it
// (two scrapes, engine/metrics.Delta) with no real server. Every request
// counts, on either API. Options.Metrics picks the families:
// MetricsVLLM (the default), MetricsSGLang, or MetricsOff (404
// {"detail":"Not Found"}, as SGLang without --enable-metrics); the
// LlamaCpp profile serves llama-server's own (see llama.cpp).
// Server.ResetMetrics zeroes every counter and histogram, as a restart
// would.
//
// The instants are the schedule's (see Cost model), durations since the
// server started: arrival (the request reached its instance's queue; a
// request arriving during a step arrives at an instant of that step),
// admitted (it left the queue for the batch: vLLM's first SCHEDULED), each
// token's instant (the end of the decode step that gave it; the first is
// "first", the last "last", which is also the finish), and the step
// before. vLLM's families, labels model_name (the instance's model) and
// engine (the instance's index among the instances of that model, "0"
// first), default buckets exactly:
//
//	vllm:time_to_first_token_seconds            first − arrival, observed at the first token
//	vllm:inter_token_latency_seconds            token − previous token, each step after the first
//	vllm:request_time_per_output_token_seconds  (last − first)/(n − 1), 0 when n = 1, at finish
//	vllm:e2e_request_latency_seconds            last − arrival, at finish
//	vllm:request_queue_time_seconds             admitted − arrival, at finish
//	vllm:request_prefill_time_seconds           first − admitted, at finish
//	vllm:request_decode_time_seconds            last − first, at finish
//	vllm:request_inference_time_seconds         last − admitted, at finish
//	vllm:prompt_tokens_total                    + prompt_tokens at the first token (the prefill done)
//	vllm:generation_tokens_total                + 1 each step
//	vllm:prefix_cache_queries_total             + prompt_tokens at admission, when a prefix cache was
//	                                            looked up (not in PrefixCacheNaive, not for exo's
//	                                            bench requests without use_prefix_cache)
//	vllm:prefix_cache_hits_total                + cached_tokens then (the block hit; exo's cache hit)
//	vllm:request_success_total{finished_reason} + 1 at finish, "stop" or "length"
//	vllm:num_requests_running                   admitted and not ended (a remote prefill included)
//	vllm:num_requests_waiting                   arrived and not admitted
//	vllm:kv_cache_usage_perc                    blocks held by running requests / the KV budget (the
//	                                            vLLM API's block cache; cached blocks no request holds
//	                                            count as free, as in vLLM; above 1 when overcommitted)
//
// n is the request's generated tokens; the sim decodes one token per step,
// so ITL's count is Σ (n − 1) and its sum Σ (last − first). With
// MetricsSGLang: sglang:time_to_first_token_seconds, sglang:inter_token_latency_seconds
// and sglang:e2e_request_latency_seconds (as above, labels model_name and
// engine_type="unified"; ITL is SGLang's token-weighted histogram, whose
// count is tokens: with one token a step it equals the per-step one),
// sglang:queue_time_seconds (admitted − arrival, observed at admission;
// with tp_rank and pp_rank "0", as the gauges), the counters
// sglang:prompt_tokens_total, sglang:generation_tokens_total,
// sglang:cached_tokens_total and sglang:num_requests_total (added at
// finish, as SGLang's tokenizer manager does), and the gauges
// sglang:num_running_reqs and sglang:num_queue_reqs; SGLang's default
// buckets, one series per model (SGLang's one tokenizer manager). A
// request that ends otherwise (its client left, a cancel, its instance
// deleted) leaves the gauges and adds no per-request observation and no
// finish, but its tokens and TTFT were counted as they happened.
// Options.StreamChunk changes what is streamed, not the metrics.
//
// Series exist as each server creates them. vLLM creates its children up
// front (make_per_engine, vllm/v1/metrics/loggers.py): every family has
// its series at zero before any request. SGLang's histograms and counters
// are prometheus_client children created by .labels() as a value is
// recorded (sglang/srt/metrics/collector.py), exposed by a
// MultiProcessCollector that shows only what was written: a fresh server
// has none of them, a family appears with its first observation (TTFT at
// a first token, queue time at an admission, the counters and e2e at a
// finish, cached_tokens_total only once something was cached), and
// ResetMetrics removes them again. Its gauges are present from the start
// (SGLang's scheduler writes them at its first stats log: the first batch,
// or an idle check every 30 s). SGLang's launch sends one warmup request
// unless --skip-server-warmup, which would create the series before the
// first user request; the sim is the server without it.
//
// # llama.cpp
//
// Options.Profile = LlamaCpp makes the server a llama.cpp llama-server
// (ggml-org/llama.cpp tools/server: server-context.cpp, server-task.cpp,
// server-common.h, server-http.cpp; common/chat.cpp), configured by
// Options.LlamaCpp as its command line would be, and only that: exo's,
// vLLM's and Ollama's routes are gone. Its routes, all at Server.URL (also
// OpenAIURL):
//
//	POST /v1/chat/completions, /chat/completions   OpenAI chat
//	POST /v1/completions                           OpenAI text completion
//	POST /completion, /completions                 llama.cpp's native completion
//	POST /tokenize        {"content", "add_special", "parse_special", "with_pieces"} → {"tokens": [...]};
//	                      a body without content → {"tokens": []}
//	POST /apply-template  {"messages"} → {"prompt"}
//	GET  /health, /v1/health   {"status": "ok"}
//	GET  /v1/models, /models   one model: id = LlamaCppOptions.Alias (the preset's model id),
//	                           meta.n_ctx the slot context, meta.n_ctx_train the model's
//	GET  /metrics              llamacpp:* (below); 501 with MetricsOff, as without --metrics
//
// Every response carries "Server: llama.cpp" and, unless the client asked
// to close, "Keep-Alive: timeout=5, max=100" (cpp-httplib's; an idle
// connection closes after 5 s, the 100th request of a connection is
// answered with Connection: close). A request's model is not checked and
// every answer names the served model. Any other route is 404 {"error":
// {"message": "File Not Found", "type": "not_found_error", "code": 404}};
// errors are format_error_response's {"error": {"code", "message",
// "type"}} with the code as the HTTP status.
//
// The connection after a stream: llama-server ends every stream by closing
// the connection (cpp-httplib closes when the content provider returns
// false, which llama-server's does after its last chunk), although its
// headers offered keep-alive. A whole (non-streamed) answer keeps the
// connection. So a client that pools connections gets the closed one back
// and may send its next request on it: that request fails before any
// byte, with an EOF ("server closed idle connection") or a reset.
//
// Slots: LlamaCppOptions.Slots (-np, 4) slots serve requests in parallel;
// a request that finds none free is deferred, in order, until one is
// released. The scheduler is llama-server's loop (see llamacpp_sched.go):
// each iteration hands queued requests to free slots (by prompt
// similarity above SlotPromptSimilarity, 0.1, else the least recently
// used, the last of equals), then decodes one batch of at most Batch
// (2048) tokens: each generating slot's next token and as many prompt
// tokens as fit, slot by slot. A slot reuses the longest common token
// prefix of its new prompt with what it holds (cache_n; at least one
// prompt token is always computed); it holds its last prompt and reply
// but the reply's last token. The host prompt cache (--cache-ram) and
// idle-slot saving are not modelled (as --cache-ram 0). A prompt of
// SlotContext tokens or more is answered, once a slot takes it, with 400
// "request (N tokens) exceeds the available context size (M tokens), try
// increasing it" (type exceed_context_size_error, with n_prompt_tokens
// and n_ctx); a generation stops, finish_reason "length", when the slot's
// context is full.
//
// Counting: the built-in tokenizer with llama.cpp's special tokens parsed
// whole, and a ChatML template with a BOS (llamacpp_tokens.go). As
// common/chat.cpp does, /apply-template drops the template's leading BOS
// when the vocabulary adds one, and the server adds it back: a chat's
// prompt_tokens is the built-in count + 1, which /tokenize of the
// /apply-template prompt gives with add_special and is one short of
// without it. LlamaCppOptions.NoAddBOS imitates a GGUF whose vocabulary
// adds none: the template keeps its BOS and both counts agree.
// Server.Counter counts as the server does. A completion prompt of text
// gets the BOS (add_special), one of token ids none. With Options.Counter
// a chat's prompt_tokens are that Counter's count (a text prompt's: its
// TokenEnds and the BOS), the slots hold the built-in token identities,
// and cache_n is their reuse scaled to the Counter's count; /tokenize and
// /apply-template speak the built-in tokenizer and template.
//
// Streams: the headers go out when a slot takes the prompt (an error
// before that is an ordinary JSON answer); the chat's role chunk
// ({"role": "assistant", "content": null}) is written together with the
// first token's chunk, then one chunk per token (Options.StreamChunk
// tokens); an end of sequence is counted in completion_tokens and never
// sent; then a chunk with finish_reason and an empty delta and, with
// stream_options.include_usage, a chunk with empty choices and usage
// (prompt_tokens_details.cached_tokens); the last of them carries
// timings; then data: [DONE]. A text completion's last chunk has the
// finish_reason, usage and timings; the native /completion stream ends
// with its final object and no [DONE]. Whole answers carry usage and
// timings.
//
// Timings, on the schedule's instants in whole µs as ggml_time_us gives
// them: cache_n, prompt_n (the tokens prefilled), prompt_ms from the
// batch holding the slot's first prompt tokens to its first token (the
// wait for a slot is in no timing), predicted_n, predicted_ms from the
// first token to the last (at least 1 µs), prompt_per_token_ms =
// prompt_ms / prompt_n, prompt_per_second = prompt_n / prompt_ms · 1000,
// predicted_per_token_ms = predicted_ms / (predicted_n − 1) and
// predicted_per_second = (predicted_n − 1) / predicted_ms · 1000 (the
// first token is free: it comes with the prompt's last batch).
//
// /metrics, as server_task_result_metrics::to_metrics writes it: no
// request counter, no KV usage, no labels, values printed by a C++ stream
// (six significant digits):
//
//	llamacpp:prompt_tokens_total             prefilled prompt tokens (cached ones excluded), per batch
//	llamacpp:prompt_tokens_cached_total      cache_n of each request, as its slot starts it
//	llamacpp:prompt_seconds_total            from the first batch holding prompt tokens not yet timed to
//	                                         the next batch with output (llama_decode is asynchronous)
//	llamacpp:tokens_predicted_total          each request's predicted_n, at its end
//	llamacpp:tokens_predicted_seconds_total  each request's predicted_ms: its n − 1 steps
//	llamacpp:n_decode_total                  batches decoded
//	llamacpp:n_tokens_max                    the longest slot seen (a counter, as llama-server types it)
//	llamacpp:spec_decode_num_draft_tokens_total, …_accepted_tokens_total, …_drafts_total   0
//	llamacpp:prompt_tokens_seconds           prompt tokens per second since the last scrape (the
//	                                         scrape resets it)
//	llamacpp:predicted_tokens_seconds        decode steps per second since the last scrape (reset too)
//	llamacpp:requests_processing             slots busy
//	llamacpp:requests_deferred               requests waiting for a slot
//	llamacpp:n_busy_slots_per_decode         busy slots per batch, on average
//
// Faults and NaturalLength work as on the other APIs. Not modelled on this
// profile: context shift, speculative decoding, n > 1, slot save and
// restore, /props, /slots, /detokenize, embeddings and reranking, and
// the chat format's parser (a reply is plain content, and reasoning in
// the reasoning mode).
//
// # Reasoning
//
// Options.Reasoning (ReasoningOptions) turns on the reasoning mode: the
// served model thinks before it answers, as Qwen3, DeepSeek R1 or gpt-oss
// do. The zero value is off and changes nothing. In the mode every chat
// request (not a text completion, which has no chat template) draws a
// thinking length, a function of its prompt's token identities, its seed
// and ReasoningOptions.Seed:
//
//	n₀ = MinTokens + splitmix64(FNV-1a(prompt ids) xor seed xor splitmix64(Seed xor salt)) mod (MaxTokens − MinTokens + 1)
//	n  = min(max(1, round(n₀ · scale(effort))), budget)      scale: minimal 1/8, low 1/4, medium 1, high 2, xhigh 4
//
// (MinTokens, MaxTokens default 64 and 256). Its n reasoning tokens are
// generated tokens like any other: decode steps of the schedule, in the
// cost model, power and metrics, counted in completion_tokens, under
// max_tokens with the answer (as every server bounds them: a request whose
// thinking reaches max_tokens ends with finish_reason "length" and no
// answer). The answer follows, of its natural length L; a request ends by
// itself after n + L tokens (plus the markers). With
// ReasoningOptions.HiddenMarkers the thinking is framed by <think> and
// </think>, one generated token each, which every server's reasoning parser
// swallows: they take steps and count in completion_tokens (eval_count,
// predicted_n) but no chunk carries them, so a stream has two tokens fewer
// than its usage; without it every generated token is sent.
//
// Each dialect streams the thinking as its server does, one kind of text a
// chunk (a chunk of StreamChunk tokens ends where the kind changes):
//
//	vLLM (VLLMURL)       delta.reasoning_content before 0.11, delta.reasoning from 0.11 (ReasoningOptions.VLLMVersion;
//	                     empty: the newest); the whole answer's message carries the same field (null without thinking)
//	                     and content null when only thinking came; usage.completion_tokens_details.reasoning_tokens
//	                     from 0.26 (VLLMReasoningTokensVersion: vllm-project/vllm#45802, the reasoning parser's count,
//	                     boundary tokens excluded), none before
//	SGLang (VLLMURL with MetricsSGLang, or ReasoningOptions.API ReasoningSGLang)
//	                     delta.reasoning_content; usage.reasoning_tokens at the top of usage, as SGLang's UsageInfo has it
//	                     (entrypoints/openai/protocol.py, usage_processor.py)
//	Ollama's OpenAI API  (VLLMURL with ReasoningOllama) delta.reasoning (openai/openai.go); usage has no reasoning count
//	Ollama (OllamaURL)   message.thinking lines, then message.content lines (api.Message.Thinking, Ollama ≥ 0.9); the
//	                     whole answer carries both; eval_count counts every generated token; no reasoning count
//	llama.cpp (LlamaCpp) delta.reasoning_content (common_chat_msg_diff_to_json_oaicompat), message.reasoning_content;
//	                     usage_json_oaicompat reports no reasoning count (server-task.cpp)
//	exo (URL)            /v1: delta {"role":"assistant","reasoning_content":...} (chunk_to_response), the whole
//	                     answer's message.reasoning_content, usage.completion_tokens_details.reasoning_tokens
//	                     (count_reasoning_tokens); the token that carries finish_reason is content whatever it is, as
//	                     parse_thinking_models sends it; /bench runs no output parser (batch_generator.py): the thinking
//	                     is content, the markers visible text, reasoning_tokens 0
//
// The controls each server takes turn the thinking off or shape it:
//
//	vLLM     chat_template_kwargs {"enable_thinking": false} or {"thinking": false}; reasoning_effort; thinking_token_budget
//	SGLang   chat_template_kwargs; reasoning_effort or reasoning.effort; custom_params.thinking_budget
//	Ollama   think: false, true, "low", "medium", "high" ("max" is "high"); on its OpenAI API reasoning_effort or
//	         reasoning.effort; no budget
//	llama.cpp  chat_template_kwargs; thinking_budget_tokens (-1: none)
//	exo      enable_thinking; reasoning_effort (none, minimal, low, medium, high, xhigh), resolved as exo's
//	         resolve_reasoning_params does: one given alone implies the other
//
// reasoning_effort "none" turns thinking off; an effort the server does not
// know is a 400 (exo: 422). A budget caps the reasoning tokens (a budget
// of 0 leaves none). Without a control a request thinks.
//
// A request's template variables (chat_template_kwargs, reasoning_effort,
// think, exo's resolved pair) are what its prompt is counted with: a
// Counter with a WithTemplateVars(map[string]any) promptsize.Counter
// method (promptsize/hf's Tokenizer, the built-in Counter) counts with
// them. The built-in template is Qwen3's in this: with enable_thinking or
// thinking false it writes the empty thinking block, <think> "\n\n"
// </think> "\n\n" (EmptyThinkTokens, the tags special tokens), after the
// generation prompt, so prompt_tokens grow by 4; other variables change
// nothing. POST /tokenize takes chat_template_kwargs too, and the llama.cpp
// profile's template writes the same block. This holds in any mode: a
// request that switches thinking off is counted so even by a server not
// in the reasoning mode.
//
// In the mode exo's sim block adds thinking_tokens (the thinking's
// generated tokens, markers included) and reasoning_tokens, the truth the
// stream's figures are checked against.
//
// # Prediction
//
// Predict runs requests through the same scheduler code with no server: a
// virtual clock submits each request at its arrival instant and moves on
// by each step's computed duration instead of sleeping it, so a thousand
// requests of a long trace take a fraction of a second. Its instants are
// a live server's for requests arriving at the same instants in the same
// order (TestPredictMatchesLiveSchedule holds them equal to the
// nanosecond); package benchkit/predict turns them into a load test's
// rows. The LlamaCpp profile's slots and remote prefill are not predicted.
// PredictDynamic adds requests while the clock runs, each when an earlier
// reply ends (a closed loop, a cap on requests in flight, a conversation's
// next turn, whose history carries the predicted reply's Text).
//
// # What is not modelled
//
// Sampling parameters, logprobs, echo, n, tools and images are accepted and ignored.
// Harmony channels, tool calls and a reasoning parser that leaves <think>
// in content are not streamed (the reasoning mode sends reasoning apart). Sliding-window attention is not modelled (KV grows
// with the whole context). Memory limits apply to placements, not to the KV
// cache, except the vLLM API's KV budget, which bounds what stays cached
// (not what runs). A batch on one node does not slow another instance on
// the same node.
package sim
