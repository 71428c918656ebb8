// thinking_ids.mjs adds the token ids to the goldens of the thinking controls that
// scripts/thinking_goldens.py writes (promptsize/hf/testdata/thinking.json): each Jinja2
// rendering encoded with add_special_tokens:false by tokenizers@0.23.2 (Hugging Face's Rust
// library, rust.mjs: what vLLM and SGLang count with) and by @lenml/tokenizers@3.7.2
// (transformers.js); a disagreement is reported on stderr and the Rust ids are written.
//
// Usage (scripts/testdata.sh runs it with REGEN_GOLDENS=1, after thinking_goldens.py):
//
//	node thinking_ids.mjs --models testdata/models --file promptsize/hf/testdata/thinking.json
import fs from "node:fs";
import path from "node:path";
import { loadTokenizer, encode } from "./goldens.mjs";
import { loadRust, rustEncode, firstDiff } from "./rust.mjs";

function args() {
  const a = {};
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || i + 1 >= argv.length) throw new Error(`bad argument ${argv[i]}`);
    a[argv[i].slice(2)] = argv[i + 1];
  }
  for (const k of ["models", "file"]) {
    if (!a[k]) throw new Error(`missing --${k}`);
  }
  return a;
}

async function main() {
  const a = args();
  const g = JSON.parse(fs.readFileSync(a.file, "utf8"));
  const loaded = {};
  let disagreements = 0;
  for (const c of g.cases) {
    if (!loaded[c.template]) {
      const dir = path.join(a.models, c.template);
      loaded[c.template] = { js: loadTokenizer(dir).tok, rust: loadRust(dir) };
    }
    const { js, rust } = loaded[c.template];
    const rs = await rustEncode(rust, c.rendered);
    const d = firstDiff(rs, encode(js, c.rendered));
    if (d !== "") {
      disagreements++;
      console.error(`${c.template}/${c.setting}/${c.conversation}: the Rust library and transformers.js ${d}; the Rust ids are written`);
    }
    c.ids = Array.from(rs);
  }
  fs.writeFileSync(a.file, JSON.stringify(g, null, 1) + "\n");
  console.error(`${a.file}: ids of ${g.cases.length} renderings, ${disagreements} disagreement(s)`);
}

await main();
