// crosscheck.mjs encodes every input of the committed goldens of promptsize/hf with
// tokenizers@0.23.2 (Hugging Face's Rust library) and compares the ids with the goldens:
// the texts and the special-token text, the 500 random strings, the corpus and every
// rendered chat. It prints one line per model and exits 1 when any id differs.
//
//	node scripts/node/crosscheck.mjs [testdata/models [promptsize/hf/testdata]]
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { loadRust, rustEncode, firstDiff } from "./rust.mjs";

const models = ["qwen3", "llama3_1", "gptoss", "gemma3", "deepseek_v3"];
const modelsDir = process.argv[2] ?? "testdata/models";
const goldenDir = process.argv[3] ?? "promptsize/hf/testdata";
const inputs = JSON.parse(fs.readFileSync(path.join(goldenDir, "inputs.json"), "utf8"));
const corpus = zlib.gunzipSync(fs.readFileSync(path.join(goldenDir, "corpus.txt.gz"))).toString("utf8");

let failed = false;
for (const model of models) {
  const g = JSON.parse(zlib.gunzipSync(fs.readFileSync(path.join(goldenDir, `${model}.json.gz`))));
  const tok = loadRust(path.join(modelsDir, model));
  const counts = {};
  const check = async (kind, name, text, want) => {
    const c = (counts[kind] ??= { ok: 0, n: 0 });
    c.n++;
    const d = firstDiff(await rustEncode(tok, text), want);
    if (d === "") c.ok++;
    else {
      failed = true;
      console.error(`${model} ${kind} ${name}: Rust and golden ${d}`);
    }
  };
  for (const [name, text] of inputs.texts) await check("texts", name, text, g.texts[name]);
  await check("texts", "special", g.special_text, g.special_ids);
  for (let i = 0; i < inputs.fuzz.length; i++) await check("fuzz", i, inputs.fuzz[i], g.fuzz[i]);
  await check("corpus", "corpus", corpus, g.corpus_ids);
  for (const [tname, cases] of Object.entries(g.chats)) {
    for (const c of cases) await check("chats", `${tname}/${c.name}`, c.rendered, c.ids);
  }
  console.log(`${model}\t` + Object.entries(counts).map(([k, c]) => `${k} ${c.ok}/${c.n}`).join("\t"));
}
process.exit(failed ? 1 : 0);
