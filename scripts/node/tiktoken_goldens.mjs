// tiktoken_goldens.mjs writes the golden ids of promptsize/hf's tiktoken-format tests
// from tiktoken@1.0.22, the WebAssembly build of OpenAI's tiktoken (its Rust core), on the
// inputs of the tokenizer.json goldens (promptsize/hf/testdata/inputs.json and
// corpus.txt.gz):
//
//   - cl100k_base and o200k_base: encode(text, "all"), special tokens allowed;
//   - kimi_o200k: o200k_base's ranks under Kimi K2's split pattern and a Kimi K2 style
//     tokenizer_config.json (testdata/tiktoken/kimi_o200k/), encoded as Kimi K2's
//     tokenizer class does through transformers: special tokens split out first
//     (leftmost-longest), every stretch between them cut into pieces of at most 400,000
//     characters and before the 25,001st character of a run of whitespace (Python's
//     str.isspace) or non-whitespace, each piece encoded by tiktoken. Three long texts
//     exercise those cuts.
//
// Usage (scripts/testdata.sh runs it with REGEN_GOLDENS=1):
//
//	node tiktoken_goldens.mjs --models testdata/models --out promptsize/hf/testdata/tiktoken
//
// It checks that the rank files scripts/testdata.sh rebuilt are the ones tiktoken encodes
// with, so the Go tests and this script share one vocabulary.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { fileURLToPath } from "node:url";
import { get_encoding, Tiktoken } from "tiktoken";

const here = path.dirname(fileURLToPath(import.meta.url));
const require_ = (p) => JSON.parse(fs.readFileSync(p, "utf8"));

// kimiPattern is KimiK2Pattern of promptsize/hf: the pat_str of Kimi K2's tokenization_kimi.py.
export const kimiPattern = [
  String.raw`[\p{Han}]+`,
  String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
  String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
  String.raw`\p{N}{1,3}`,
  String.raw` ?[^\s\p{L}\p{N}]+[\r\n]*`,
  String.raw`\s*[\r\n]+`,
  String.raw`\s+(?!\S)`,
  String.raw`\s+`,
].join("|");

function args() {
  const a = {};
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || i + 1 >= argv.length) throw new Error(`bad argument ${argv[i]}`);
    a[argv[i].slice(2)] = argv[i + 1];
  }
  for (const k of ["models", "out"]) if (!a[k]) throw new Error(`missing --${k}`);
  return a;
}

// rankFile rebuilds the .tiktoken text ("<base64> <rank>" lines) of a tiktoken encoder file.
function rankFile(name) {
  const j = require_(path.join(here, "node_modules", "tiktoken", "encoders", `${name}.json`));
  let out = "";
  for (const line of j.bpe_ranks.split("\n").filter(Boolean)) {
    const [, first, ...toks] = line.split(" ");
    toks.forEach((t, i) => (out += `${t} ${Number(first) + i}\n`));
  }
  return { json: j, text: out };
}

// specialText glues special tokens to letters, spaces and each other, and ends with a
// truncated look-alike, like goldens.mjs does for the tokenizer.json models.
function specialText(specials) {
  const sorted = Object.entries(specials).sort((a, b) => a[1] - b[1]).map(([s]) => s);
  const pick = sorted.length <= 10 ? sorted : [...sorted.slice(0, 5), ...sorted.slice(-5)];
  let s = "x";
  pick.forEach((t, i) => (s += t + ["y ", "", "\n", " z", "  "][i % 5]));
  return s + pick[0].slice(0, -1) + " " + pick[0] + pick[0];
}

// pyIsSpace is Python's str.isspace for one character.
const pyIsSpace = (c) => /^[\s\x1c-\x1f\x85]$/u.test(c) && c !== "\ufeff";

// kimiChunks cuts text (code points) as Kimi K2's encode does.
function kimiChunks(text) {
  const cps = Array.from(text);
  const out = [];
  for (let i = 0; i < cps.length; i += 400000) {
    const s = cps.slice(i, i + 400000);
    let len = 0;
    let space = s.length > 0 ? pyIsSpace(s[0]) : false;
    let start = 0;
    for (let j = 0; j < s.length; j++) {
      const now = pyIsSpace(s[j]);
      if (space !== now) {
        len = 1;
        space = now;
      } else {
        len++;
        if (len > 25000) {
          out.push(s.slice(start, j).join(""));
          start = j;
          len = 1;
        }
      }
    }
    out.push(s.slice(start).join(""));
  }
  return out;
}

// splitSpecials cuts text into [string, isSpecial] parts, leftmost-longest.
function splitSpecials(text, specials) {
  const names = Object.keys(specials).sort((a, b) => b.length - a.length);
  const parts = [];
  let pos = 0;
  let gap = 0;
  while (pos < text.length) {
    const hit = names.find((n) => text.startsWith(n, pos));
    if (hit === undefined) {
      pos++;
      continue;
    }
    if (gap < pos) parts.push([text.slice(gap, pos), false]);
    parts.push([hit, true]);
    pos += hit.length;
    gap = pos;
  }
  if (gap < text.length) parts.push([text.slice(gap), false]);
  return parts;
}

// kimiSpecials returns the special tokens of a Kimi K2 style tokenizer_config.json over n ranks.
function kimiSpecials(cfg, n) {
  const byId = new Map(Object.entries(cfg.added_tokens_decoder ?? {}).map(([id, t]) => [Number(id), t.content]));
  const out = {};
  for (let id = n; id < n + 256; id++) if (!byId.has(id)) out[`<|reserved_token_${id}|>`] = id;
  for (const [id, c] of byId) out[c] = id;
  return out;
}

function main() {
  const a = args();
  const repo = path.resolve(here, "..", "..");
  const inputs = require_(path.join(repo, "promptsize/hf/testdata/inputs.json"));
  const corpus = zlib.gunzipSync(fs.readFileSync(path.join(repo, "promptsize/hf/testdata/corpus.txt.gz"))).toString("utf8");
  fs.mkdirSync(a.out, { recursive: true });

  const encodings = [];
  for (const name of ["cl100k_base", "o200k_base"]) {
    const { json, text } = rankFile(name);
    const onDisk = fs.readFileSync(path.join(a.models, "tiktoken", `${name}.tiktoken`), "utf8");
    if (onDisk !== text) throw new Error(`${name}: ${a.models}/tiktoken/${name}.tiktoken differs from tiktoken's ranks; rerun scripts/testdata.sh`);
    const enc = get_encoding(name);
    encodings.push({ name, specials: json.special_tokens, encode: (s) => Array.from(enc.encode(s, "all")), extra: [] });
  }
  {
    const { json } = rankFile("o200k_base");
    const cfg = require_(path.join(a.out, "kimi_o200k", "tokenizer_config.json"));
    const n = json.bpe_ranks.split("\n").filter(Boolean).reduce((k, l) => k + l.split(" ").length - 2, 0);
    const specials = kimiSpecials(cfg, n);
    const enc = new Tiktoken(json.bpe_ranks, specials, kimiPattern);
    const encode = (text) => {
      const ids = [];
      for (const [part, special] of splitSpecials(text, specials)) {
        if (special) ids.push(specials[part]);
        else for (const c of kimiChunks(part)) for (const id of enc.encode(c, "all")) ids.push(id);
      }
      return ids;
    };
    const extra = [
      ["digits_25001", "1".repeat(25001)],
      ["digits_then_x1c", "1".repeat(12500) + "\x1c".repeat(12501) + "2"],
      ["ab_400002", "ab ".repeat(133334)],
    ];
    encodings.push({ name: "kimi_o200k", specials, encode, extra });
  }

  for (const e of encodings) {
    const special = specialText(e.specials);
    const g = {
      encoding: e.name,
      generator: "scripts/node/tiktoken_goldens.mjs with tiktoken@1.0.22",
      special_text: special,
      special_ids: e.encode(special),
      texts: Object.fromEntries(inputs.texts.map(([name, text]) => [name, e.encode(text)])),
      fuzz: inputs.fuzz.map((s) => e.encode(s)),
      corpus_ids: e.encode(corpus),
      extra: e.extra.map(([name, text]) => ({ name, text, ids: e.encode(text) })),
    };
    const file = path.join(a.out, `${e.name}.json.gz`);
    fs.writeFileSync(file, zlib.gzipSync(Buffer.from(JSON.stringify(g)), { level: 9 }));
    console.error(`${file}: ${g.corpus_ids.length} corpus tokens`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) main();
