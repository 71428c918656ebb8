// speed_rust.mjs measures the encode speed of tokenizers@0.23.2, Hugging Face's Rust
// tokenizers library (what vLLM and SGLang count with), on the golden corpus or any
// gzipped text, in the output format of speed.mjs:
//
//	node scripts/node/speed_rust.mjs [testdata/models [promptsize/hf/testdata/corpus.txt.gz]]
//
// For each model it loads a fresh tokenizer, times the first encode ("cold": its BPE cache
// is empty) and then the fastest of five more ("warm"). One encode runs on one thread.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { loadRust, rustEncode } from "./rust.mjs";

const models = ["qwen3", "llama3_1", "gptoss", "gemma3", "deepseek_v3"];
const modelsDir = process.argv[2] ?? "testdata/models";
const corpusFile = process.argv[3] ?? "promptsize/hf/testdata/corpus.txt.gz";
const corpus = zlib.gunzipSync(fs.readFileSync(corpusFile)).toString("utf8");

for (const model of models) {
  const tok = loadRust(path.join(modelsDir, model));
  let t0 = process.hrtime.bigint();
  const n = (await rustEncode(tok, corpus)).length;
  const cold = Number(process.hrtime.bigint() - t0) / 1e9;
  let warm = Infinity;
  for (let i = 0; i < 5; i++) {
    t0 = process.hrtime.bigint();
    await rustEncode(tok, corpus);
    warm = Math.min(warm, Number(process.hrtime.bigint() - t0) / 1e9);
  }
  console.log(`${model}\t${n} tokens\tcold ${(n / cold / 1e3).toFixed(0)}k tok/s\twarm ${(n / warm / 1e3).toFixed(0)}k tok/s`);
}
