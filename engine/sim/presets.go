package sim

import (
	"fmt"
	"time"
)

const (
	gib = 1 << 30
	tb  = 1e12
)

// M3UltraGemma27B is an Apple M3 Ultra (80-core GPU, 819 GB/s, about
// 28.4 TFLOPS fp16, 512 GB) serving Gemma 3 27B in 4-bit MLX quantisation,
// exo's reference single-node configuration. It is the default preset.
// Its efficiencies and step overhead are assumptions: it was not checked
// against a measured run or a published benchmark figure.
func M3UltraGemma27B() Preset {
	return Preset{
		Name: "m3-ultra-gemma3-27b-4bit",
		Hardware: Hardware{
			Name:              "Apple M3 Ultra (80-core GPU, 819 GB/s)",
			Chip:              "Apple M3 Ultra",
			MachineModel:      "Mac15,14",
			MemoryBandwidth:   819e9,
			FLOPS:             28.4e12,
			MemoryEfficiency:  0.7,
			ComputeEfficiency: 0.6,
			StepOverhead:      time.Millisecond,
			RAM:               512 * gib,
			Disk:              2 * tb,
			IdleWatts:         12,
			ComputeWatts:      160,
			MemoryWatts:       60,
			RingLatency:       60 * time.Microsecond,
			RDMALatency:       10 * time.Microsecond,
			LinkBandwidth:     10e9, // Thunderbolt 5, 80 Gb/s
		},
		Model: Model{
			ID:                "sim/gemma-3-27b-it-4bit",
			Family:            "gemma",
			Quantization:      "4bit",
			BaseModel:         "Gemma 3 27B",
			Params:            27.4e9,
			BitsPerWeight:     4.5,
			Layers:            62,
			Heads:             32,
			KVHeads:           16,
			HeadDim:           128,
			HiddenSize:        5376,
			KVBytesPerElement: 2,
			ContextLength:     131072,
			SupportsTensor:    true,
		},
	}
}

// M4MaxLlama8B is an Apple M4 Max (40-core GPU, 546 GB/s, about 18.4 TFLOPS
// fp16, 128 GB) serving Llama 3.1 8B Instruct in 4-bit MLX quantisation.
// Its efficiencies and step overhead are assumptions: it was not checked
// against a measured run or a published benchmark figure.
func M4MaxLlama8B() Preset {
	return Preset{
		Name: "m4-max-llama3.1-8b-4bit",
		Hardware: Hardware{
			Name:              "Apple M4 Max (40-core GPU, 546 GB/s)",
			Chip:              "Apple M4 Max",
			MachineModel:      "Mac16,9",
			MemoryBandwidth:   546e9,
			FLOPS:             18.4e12,
			MemoryEfficiency:  0.7,
			ComputeEfficiency: 0.6,
			StepOverhead:      time.Millisecond,
			RAM:               128 * gib,
			Disk:              1 * tb,
			IdleWatts:         8,
			ComputeWatts:      70,
			MemoryWatts:       25,
			RingLatency:       60 * time.Microsecond,
			RDMALatency:       10 * time.Microsecond,
			LinkBandwidth:     10e9,
		},
		Model: llama8B("sim/Llama-3.1-8B-Instruct-4bit", "4bit", 4.5),
	}
}

// H100Llama8B is an NVIDIA H100 SXM (3.35 TB/s HBM3, about 989 TFLOPS dense
// bf16, 80 GB) serving Llama 3.1 8B Instruct in bf16, as vLLM would.
// Its efficiencies and step overhead are assumptions: it was not checked
// against a measured run or a published benchmark figure.
func H100Llama8B() Preset {
	return Preset{
		Name: "h100-llama3.1-8b-bf16",
		Hardware: Hardware{
			Name:              "NVIDIA H100 SXM (3.35 TB/s, 989 TFLOPS bf16)",
			Chip:              "NVIDIA H100 SXM",
			MachineModel:      "H100-SXM5-80GB",
			MemoryBandwidth:   3.35e12,
			FLOPS:             989e12,
			MemoryEfficiency:  0.8,
			ComputeEfficiency: 0.5,
			StepOverhead:      300 * time.Microsecond,
			RAM:               80 * gib,
			Disk:              4 * tb,
			IdleWatts:         70,
			ComputeWatts:      500,
			MemoryWatts:       130,
			RingLatency:       20 * time.Microsecond,
			RDMALatency:       5 * time.Microsecond,
			LinkBandwidth:     50e9, // 400 Gb/s InfiniBand
		},
		Model: llama8B("sim/Llama-3.1-8B-Instruct-bf16", "bf16", 16),
	}
}

func llama8B(id, quant string, bits float64) Model {
	return Model{
		ID:                id,
		Family:            "llama",
		Quantization:      quant,
		BaseModel:         "Llama 3.1 8B",
		Params:            8.03e9,
		BitsPerWeight:     bits,
		Layers:            32,
		Heads:             32,
		KVHeads:           8,
		HeadDim:           128,
		HiddenSize:        4096,
		KVBytesPerElement: 2,
		ContextLength:     131072,
		SupportsTensor:    true,
	}
}

// Fast is a fictional machine for tests: a 1 GB model on 1 TB/s, so a decode
// step takes about 1.05 ms and a short prompt prefills in about a
// millisecond. Its numbers describe no real hardware, so there is nothing
// to check them against.
func Fast() Preset {
	return Preset{
		Name: "fast",
		Hardware: Hardware{
			Name:            "test machine (1 TB/s, 1 PFLOPS)",
			Chip:            "sim test chip",
			MachineModel:    "sim",
			MemoryBandwidth: 1e12,
			FLOPS:           1e15,
			StepOverhead:    50 * time.Microsecond,
			RAM:             64 * gib,
			Disk:            1 * tb,
			IdleWatts:       10,
			ComputeWatts:    100,
			MemoryWatts:     40,
			RingLatency:     20 * time.Microsecond,
			RDMALatency:     5 * time.Microsecond,
			LinkBandwidth:   10e9,
		},
		Model: Model{
			ID:                "sim/tiny-1b-8bit",
			Family:            "sim",
			Quantization:      "8bit",
			BaseModel:         "sim tiny 1B",
			Params:            1e9,
			BitsPerWeight:     8,
			Layers:            8,
			Heads:             16,
			KVHeads:           4,
			HeadDim:           64,
			HiddenSize:        1024,
			KVBytesPerElement: 2,
			ContextLength:     32768,
			SupportsTensor:    true,
		},
	}
}

// Presets returns every built-in preset, the default first. A preset
// fitted to a measured server (package twin) says its error on runs it
// was not fitted to; these do not.
func Presets() []Preset {
	return []Preset{M3UltraGemma27B(), M4MaxLlama8B(), H100Llama8B(), Fast()}
}

// PresetNames returns the Names of the built-in presets, in Presets'
// order: what a --preset flag accepts.
func PresetNames() []string {
	var names []string
	for _, p := range Presets() {
		names = append(names, p.Name)
	}
	return names
}

// PresetByName returns the built-in preset with the given Name.
func PresetByName(name string) (Preset, error) {
	names := PresetNames()
	for _, p := range Presets() {
		if p.Name == name {
			return p, nil
		}
	}
	return Preset{}, fmt.Errorf("sim: unknown preset %q: expected one of %q", name, names)
}
