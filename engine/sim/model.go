package sim

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// DefaultPrefillChunk is the number of prompt tokens prefilled per chunk,
// exo's prefill step size.
const DefaultPrefillChunk = 4096

// Hardware describes one simulated node: published peak figures, the
// fraction of them a real inference engine reaches, and a power model.
type Hardware struct {
	// Name is the human name, e.g. "Apple M3 Ultra (80-core GPU)".
	Name string
	// Chip is what /state/nodeIdentities reports as chipId.
	Chip string
	// MachineModel is what /state/nodeIdentities reports as modelId.
	MachineModel string
	// MemoryBandwidth is the published peak memory bandwidth in bytes/s.
	MemoryBandwidth float64
	// FLOPS is the published peak dense FLOP/s at the model's compute
	// precision (fp16/bf16).
	FLOPS float64
	// MemoryEfficiency is the fraction of MemoryBandwidth a decode step
	// achieves (0 means 1).
	MemoryEfficiency float64
	// ComputeEfficiency is the fraction of FLOPS a prefill achieves
	// (0 means 1).
	ComputeEfficiency float64
	// StepOverhead is the fixed cost of every engine step (kernel
	// launches, sampling, scheduling).
	StepOverhead time.Duration
	// RAM is the memory available for weights and KV cache, in bytes.
	RAM int64
	// Disk is the node's disk size in bytes (/state/nodeDisk).
	Disk int64
	// IdleWatts is the node's system power with nothing running.
	IdleWatts float64
	// ComputeWatts is the extra power at full compute utilisation.
	ComputeWatts float64
	// MemoryWatts is the extra power at full memory-bandwidth utilisation.
	MemoryWatts float64
	// RingLatency is the per-hop latency between nodes over TCP (MlxRing).
	RingLatency time.Duration
	// RDMALatency is the per-hop latency between nodes over RDMA (MlxJaccl).
	RDMALatency time.Duration
	// LinkBandwidth is the bandwidth between two nodes in bytes/s, used
	// for the KV transfer of a remote prefill.
	LinkBandwidth float64
}

// EffectiveBandwidth is MemoryBandwidth × MemoryEfficiency, in bytes/s.
func (h Hardware) EffectiveBandwidth() float64 {
	return h.MemoryBandwidth * orOne(h.MemoryEfficiency)
}

// EffectiveFLOPS is FLOPS × ComputeEfficiency, in FLOP/s.
func (h Hardware) EffectiveFLOPS() float64 {
	return h.FLOPS * orOne(h.ComputeEfficiency)
}

func orOne(x float64) float64 {
	if x <= 0 {
		return 1
	}
	return x
}

// Model describes the simulated model's shape: what its weights weigh, what
// one token of KV cache weighs, and what attention costs.
type Model struct {
	// ID is the full model id requests name (it starts with "sim/").
	ID string
	// Family, Quantization and BaseModel fill the /models card.
	Family, Quantization, BaseModel string
	// Params is the number of parameters.
	Params float64
	// ActiveParams is the number of parameters used per token (MoE); 0
	// means Params (a dense model).
	ActiveParams float64
	// BitsPerWeight is the stored size of a weight including quantisation
	// scales (4-bit with group size 64 and fp16 scale and bias: 4.5).
	BitsPerWeight float64
	// Layers, Heads, KVHeads, HeadDim and HiddenSize are the
	// transformer's shape.
	Layers, Heads, KVHeads, HeadDim, HiddenSize int
	// KVBytesPerElement is the size of one cached key or value element
	// (2 for fp16/bf16).
	KVBytesPerElement float64
	// ContextLength is the longest context the model accepts.
	ContextLength int
	// SupportsTensor says whether tensor-parallel placements are offered.
	SupportsTensor bool
}

// Name is the part of ID after the last "/".
func (m Model) Name() string {
	return m.ID[strings.LastIndex(m.ID, "/")+1:]
}

// WeightBytes is the size of the weights:
//
//	W = Params · BitsPerWeight / 8
func (m Model) WeightBytes() float64 { return m.Params * m.BitsPerWeight / 8 }

// KVBytesPerToken is the KV cache one token occupies:
//
//	kv = 2 · Layers · KVHeads · HeadDim · KVBytesPerElement
//
// (one key and one value vector per KV head per layer).
func (m Model) KVBytesPerToken() float64 {
	return 2 * float64(m.Layers*m.KVHeads*m.HeadDim) * m.KVBytesPerElement
}

// AttentionFLOPsPerPair is the attention work for one (query, key) pair
// over all layers and heads:
//
//	a = 4 · Layers · Heads · HeadDim
//
// (2 FLOPs per multiply-add, once for Q·Kᵀ and once for the weighted sum
// of V).
func (m Model) AttentionFLOPsPerPair() float64 {
	return 4 * float64(m.Layers*m.Heads*m.HeadDim)
}

func (m Model) active() float64 {
	if m.ActiveParams > 0 {
		return m.ActiveParams
	}
	return m.Params
}

// A Preset pairs a Hardware with a Model. Its methods are the cost model
// for one node; see the package documentation for the formulas.
type Preset struct {
	// Name is the preset's short name ("m3-ultra-gemma3-27b-4bit").
	Name     string
	Hardware Hardware
	Model    Model
	// Fitted, when set, replaces the roofline's time terms with
	// coefficients fitted to a measured server (see Coefficients); the
	// Hardware and Model then only size memory (the KV budget, the
	// reported peak memory), hop latencies and power.
	Fitted *Coefficients
}

// Coefficients are a cost model of the roofline's form whose terms were
// fitted to a measured server rather than derived from published peaks.
// Every duration is in seconds. With them a decode step of a batch whose
// requests hold contexts[i] tokens each is
//
//	t = max(DecodeBase + DecodePerContextToken · Σ contexts,
//	        DecodePerRequest · batch) + StepOverhead
//
// and a prefill chunk of n tokens on top of offset cached ones is
//
//	t = max(PrefillBase + PrefillPerCachedToken · offset,
//	        PrefillPerToken · n + PrefillPerPair · (n · offset + n(n+1)/2)) + StepOverhead
//
// The roofline is the case DecodeBase = PrefillBase = W/B,
// DecodePerContextToken = PrefillPerCachedToken = kv/B,
// DecodePerRequest = PrefillPerToken = 2·N_active/F,
// PrefillPerPair = a/F and StepOverhead = Hardware.StepOverhead.
// A llama.cpp batch that mixes generating slots and prompt chunks is
//
//	t = max(base + DecodePerContextToken · Σ contexts + PrefillPerCachedToken · Σ offsets,
//	        DecodePerRequest · slots + PrefillPerToken · Σ n + PrefillPerPair · Σ pairs) + StepOverhead
//
// with base DecodeBase when a slot generates, PrefillBase otherwise.
// With AttentionOverKV, Σ pairs is tokens · keys: every token of the step
// (slots + Σ n) against every key the cache holds after it (Σ contexts +
// Σ (offset + n)), and a decode step's compute adds PrefillPerPair ·
// batch · Σ contexts.
// Placements over several nodes scale a step as the roofline's (see
// the package documentation). Power has no fitted terms: a step's
// compute and memory utilisations are its fitted compute and memory
// terms over its duration, times the Hardware's watts.
type Coefficients struct {
	StepOverhead          float64 `json:"step_overhead_s"`
	DecodeBase            float64 `json:"decode_base_s"`
	DecodePerContextToken float64 `json:"decode_per_context_token_s"`
	DecodePerRequest      float64 `json:"decode_per_request_s"`
	PrefillBase           float64 `json:"prefill_base_s"`
	PrefillPerToken       float64 `json:"prefill_per_token_s"`
	PrefillPerPair        float64 `json:"prefill_per_pair_s"`
	PrefillPerCachedToken float64 `json:"prefill_per_cached_token_s"`
	// AttentionOverKV says every token of a step attends over every key
	// the cache holds, its own request's or not (llama.cpp without flash
	// attention: one KV cache over all slots, each token's scores over
	// all its used cells, masked): the step's compute then has
	// PrefillPerPair · tokens · keys for its pairs, where tokens are the
	// step's (generating slots' and prompt chunks') and keys every
	// request's context after it, instead of each request's own causal
	// pairs; a decode step's tokens count too. Under a burst the slots
	// then slow each other's prompts, as on Ollama and llama-server.
	AttentionOverKV bool `json:"attention_over_kv,omitempty"`
	// MaxRunning is the scheduler's cap on running requests (vLLM's max
	// running requests, Ollama's and llama.cpp's parallel slots) where
	// the records showed one; 0: unknown, Options.MaxRunning applies.
	MaxRunning int `json:"max_running,omitempty"`
}

// String returns the preset's name and what it simulates, e.g.
// "fast (simulated: test machine (1 TB/s, 1 PFLOPS) + sim/tiny-1b-8bit)".
func (p Preset) String() string {
	return fmt.Sprintf("%s (simulated: %s + %s)", p.Name, p.Hardware.Name, p.Model.ID)
}

// DecodeStep is the duration of one decode step for a running batch whose
// requests hold contexts[i] tokens of KV cache each (batch = len(contexts)):
//
//	t = max((W + kv · Σ contexts) / B, 2 · N_active · batch / F) + overhead
//
// with W = WeightBytes, kv = KVBytesPerToken, B = EffectiveBandwidth,
// F = EffectiveFLOPS. Every request of the batch gets one token per step.
func (p Preset) DecodeStep(contexts []int) time.Duration {
	return p.cost(1, false, 0).decodeStep(contexts)
}

// PrefillChunkTime is the duration of prefilling one chunk of n tokens on
// top of offset tokens already in the KV cache:
//
//	t = max((W + kv · offset) / B, (2 · N_active · n + a · (n · offset + n(n+1)/2)) / F) + overhead
//
// where a = AttentionFLOPsPerPair: token i of the chunk attends to
// offset + i keys.
func (p Preset) PrefillChunkTime(n, offset int) time.Duration {
	return p.cost(1, false, 0).prefillChunk(n, offset)
}

// PrefillTime is the duration of prefilling n tokens after offset cached
// ones, in chunks of chunk tokens (chunk ≤ 0 means DefaultPrefillChunk): the
// sum of PrefillChunkTime over the chunks.
func (p Preset) PrefillTime(n, offset, chunk int) time.Duration {
	return p.cost(1, false, 0).prefill(n, offset, chunk)
}

// DecodeRate is the per-request decode rate, in tokens/s, of a batch of
// batch requests that each hold context tokens: 1 / DecodeStep.
func (p Preset) DecodeRate(batch, context int) float64 {
	ctx := make([]int, batch)
	for i := range ctx {
		ctx[i] = context
	}
	return 1 / p.DecodeStep(ctx).Seconds()
}

// PrefillRate is the prefill rate, in tokens/s, of n tokens on a cold cache:
// n / PrefillTime(n, 0, DefaultPrefillChunk).
func (p Preset) PrefillRate(n int) float64 {
	return float64(n) / p.PrefillTime(n, 0, DefaultPrefillChunk).Seconds()
}

// KVCacheBlocks is the default KV budget of an instance of the preset's
// model on nodes nodes, in blocks of blockSize tokens (≤ 0 means
// DefaultBlockSize): what KVMemoryFraction of the nodes' memory holds
// beyond the weights,
//
//	blocks = ⌊(KVMemoryFraction · nodes · RAM − W) / (kv · blockSize)⌋, at least 1
//
// as vLLM sizes its KV cache from --gpu-memory-utilization.
func (p Preset) KVCacheBlocks(blockSize, nodes int) int {
	if blockSize <= 0 {
		blockSize = DefaultBlockSize
	}
	nodes = max(nodes, 1)
	free := KVMemoryFraction*float64(nodes)*float64(p.Hardware.RAM) - p.Model.WeightBytes()
	per := p.Model.KVBytesPerToken() * float64(blockSize)
	if free <= 0 || per <= 0 {
		return 1
	}
	return max(int(free/per), 1)
}

// cost is the cost model of one instance: the preset spread over nodes
// nodes, tensor- or pipeline-parallel, with hop latency between nodes.
type cost struct {
	p      Preset
	nodes  int
	tensor bool
	hop    time.Duration
}

func (p Preset) cost(nodes int, tensor bool, hop time.Duration) cost {
	if nodes < 1 {
		nodes = 1
	}
	return cost{p: p, nodes: nodes, tensor: tensor, hop: hop}
}

// finish turns a single-node roofline time into a step time on the
// instance's placement: tensor parallelism divides it by the node count and
// pays 2 hops per layer; pipeline parallelism keeps it and pays a hop per
// extra node.
func (c cost) finish(roofline float64) time.Duration {
	t := roofline
	comm := time.Duration(0)
	if c.nodes > 1 {
		if c.tensor {
			t /= float64(c.nodes)
			comm = time.Duration(2*c.p.Model.Layers) * c.hop
		} else {
			comm = time.Duration(c.nodes-1) * c.hop
		}
	}
	over := c.p.Hardware.StepOverhead
	if f := c.p.Fitted; f != nil {
		over = seconds(f.StepOverhead)
	}
	return seconds(t) + over + comm
}

// roofDecode returns the memory and compute times of a decode step: the
// roofline's, or the fitted ones when the preset has Coefficients.
func (c cost) roofDecode(contexts []int) (mem, comp float64) {
	m, h := c.p.Model, c.p.Hardware
	sum := 0
	for _, x := range contexts {
		sum += x
	}
	if f := c.p.Fitted; f != nil {
		mem = f.DecodeBase + f.DecodePerContextToken*float64(sum)
		comp = f.DecodePerRequest * float64(len(contexts))
		if f.AttentionOverKV {
			comp += f.PrefillPerPair * float64(len(contexts)) * float64(sum)
		}
		return mem, comp
	}
	mem = (m.WeightBytes() + m.KVBytesPerToken()*float64(sum)) / h.EffectiveBandwidth()
	comp = 2 * m.active() * float64(len(contexts)) / h.EffectiveFLOPS()
	return mem, comp
}

func (c cost) decodeStep(contexts []int) time.Duration {
	mem, comp := c.roofDecode(contexts)
	return c.finish(math.Max(mem, comp))
}

// roofPrefill returns the memory and compute times of a prefill chunk:
// the roofline's, or the fitted ones when the preset has Coefficients.
func (c cost) roofPrefill(n, offset int) (mem, comp float64) {
	m, h := c.p.Model, c.p.Hardware
	fn, fo := float64(n), float64(offset)
	if f := c.p.Fitted; f != nil {
		mem = f.PrefillBase + f.PrefillPerCachedToken*fo
		pairs := fn*fo + fn*(fn+1)/2
		if f.AttentionOverKV {
			pairs = fn * (fo + fn)
		}
		comp = f.PrefillPerToken*fn + f.PrefillPerPair*pairs
		return mem, comp
	}
	mem = (m.WeightBytes() + m.KVBytesPerToken()*fo) / h.EffectiveBandwidth()
	comp = (2*m.active()*fn + m.AttentionFLOPsPerPair()*(fn*fo+fn*(fn+1)/2)) / h.EffectiveFLOPS()
	return mem, comp
}

func (c cost) prefillChunk(n, offset int) time.Duration {
	mem, comp := c.roofPrefill(n, offset)
	return c.finish(math.Max(mem, comp))
}

func (c cost) prefill(n, offset, chunk int) time.Duration {
	if chunk <= 0 {
		chunk = DefaultPrefillChunk
	}
	var total time.Duration
	for done := 0; done < n; done += chunk {
		k := min(chunk, n-done)
		total += c.prefillChunk(k, offset+done)
	}
	return total
}

// utilisation returns the fractions of a step of duration step spent
// bound on compute and on memory, on each node of the instance.
func (c cost) utilisation(mem, comp float64, step time.Duration) (uc, um float64) {
	if step <= 0 {
		return 0, 0
	}
	// A tensor shard does 1/k of the work; a pipeline stage holds 1/k
	// of the layers and is busy for 1/k of the step. Either way each
	// node carries 1/k of both terms.
	k := float64(c.nodes)
	mem, comp = mem/k, comp/k
	s := step.Seconds()
	return math.Min(comp/s, 1), math.Min(mem/s, 1)
}

func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s * 1e9))
}
