// speed.mjs measures the JavaScript reference's encode speed on the golden
// corpus, to set beside BenchmarkEncodeCorpus of promptsize/hf:
//
//	node scripts/node/speed.mjs [testdata/models [promptsize/hf/testdata/corpus.txt.gz]]
//
// For each model it loads a fresh tokenizer, times the first encode of the
// corpus ("cold": its BPE cache is empty) and then the fastest of five more
// ("warm"). Node runs JavaScript on one thread, so compare with -cpu 1.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { loadTokenizer, encode, models } from "./goldens.mjs";

const modelsDir = process.argv[2] ?? "testdata/models";
const corpusFile = process.argv[3] ?? "promptsize/hf/testdata/corpus.txt.gz";
const corpus = zlib.gunzipSync(fs.readFileSync(corpusFile)).toString("utf8");

for (const model of models) {
  const { tok } = loadTokenizer(path.join(modelsDir, model));
  let t0 = process.hrtime.bigint();
  const n = encode(tok, corpus).length;
  const cold = Number(process.hrtime.bigint() - t0) / 1e9;
  let warm = Infinity;
  for (let i = 0; i < 5; i++) {
    t0 = process.hrtime.bigint();
    encode(tok, corpus);
    warm = Math.min(warm, Number(process.hrtime.bigint() - t0) / 1e9);
  }
  console.log(`${model}\t${n} tokens\tcold ${(n / cold / 1e3).toFixed(0)}k tok/s\twarm ${(n / warm / 1e3).toFixed(0)}k tok/s`);
}
