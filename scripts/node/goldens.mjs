// goldens.mjs writes the golden files of promptsize/hf from the reference libraries:
// tokenizers@0.23.2 (Hugging Face's Rust library, rust.mjs) and @lenml/tokenizers@3.7.2 (a
// fork of transformers.js) both encode with add_special_tokens:false; every disagreement
// between them is reported on stderr and the Rust library's ids are written. And @huggingface/jinja@0.5.11 renders chat templates with
// {messages, add_generation_prompt: true, bos_token, eos_token, pad_token, unk_token[, tools]}
// and strftime_now pinned to one date. That is the sequence apply_chat_template runs.
//
// Usage (scripts/testdata.sh runs it with REGEN_GOLDENS=1):
//
//	node goldens.mjs --models testdata/models --gptoss-template <path> \
//	    --llama3x-template <path> --out promptsize/hf/testdata
//
// The two templates come from the Go module cache (github.com/ardanlabs/jinja@v1.8.0
// testdata); they are read, never copied into the repository.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { TokenizerLoader } from "@lenml/tokenizers";
import { Template, Environment } from "@huggingface/jinja";
import { texts, fuzzStrings, corpus, chats } from "./inputs.mjs";
import { loadRust, rustEncode, firstDiff } from "./rust.mjs";

export const models = ["qwen3", "llama3_1", "gptoss", "gemma3", "deepseek_v3"];
export const corpusBytes = 200 * 1024;
export const corpusSeed = 20261129;
const fuzzSeed = 42;
const fuzzCount = 500;
// pinnedDate is the date strftime_now returns in the goldens (UTC midnight).
const pinnedDate = "2024-07-26";

function args() {
  const a = {};
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || i + 1 >= argv.length) throw new Error(`bad argument ${argv[i]}`);
    a[argv[i].slice(2)] = argv[i + 1];
  }
  for (const k of ["models", "gptoss-template", "llama3x-template", "out"]) {
    if (!a[k]) throw new Error(`missing --${k}`);
  }
  return a;
}

export function loadTokenizer(dir) {
  const tokenizerJSON = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
  const tokenizerConfig = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
  return { tok: TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig }), tokenizerJSON, tokenizerConfig };
}

export function encode(tok, text) {
  return Array.from(tok.encode(text, { add_special_tokens: false }));
}

// tokenString reads a special token of tokenizer_config.json: a string, an AddedToken
// object or null.
function tokenString(v) {
  if (v === null || v === undefined) return undefined;
  if (typeof v === "string") return v;
  return v.content;
}

const monthsShort = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const monthsLong = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
const daysShort = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const daysLong = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

// strftime formats the pinned date (a UTC day) with the directives chat templates use.
function strftime(fmt) {
  const d = new Date(pinnedDate + "T00:00:00Z");
  const pad = (n) => String(n).padStart(2, "0");
  return fmt.replace(/%(.)/g, (_, c) => {
    switch (c) {
      case "Y": return String(d.getUTCFullYear());
      case "y": return pad(d.getUTCFullYear() % 100);
      case "m": return pad(d.getUTCMonth() + 1);
      case "d": return pad(d.getUTCDate());
      case "b": return monthsShort[d.getUTCMonth()];
      case "B": return monthsLong[d.getUTCMonth()];
      case "a": return daysShort[d.getUTCDay()];
      case "A": return daysLong[d.getUTCDay()];
      case "H": return "00";
      case "M": return "00";
      case "S": return "00";
      case "%": return "%";
      default: throw new Error(`strftime: unsupported directive %${c}`);
    }
  });
}

// specialText builds a text from the model's added tokens: some at the start and end of
// the id range, glued to letters, spaces and each other, plus a truncated look-alike.
function specialText(added) {
  const sorted = [...added].sort((a, b) => a.id - b.id);
  const pick = sorted.length <= 10 ? sorted : [...sorted.slice(0, 5), ...sorted.slice(-5)];
  // Gemma-style whitespace added tokens, if any, so that longest-first matching matters.
  for (const t of sorted) {
    if (/^[\s]+$/.test(t.content) && pick.length < 16 && !pick.includes(t)) pick.push(t);
  }
  let s = "x";
  pick.forEach((t, i) => {
    s += t.content + ["y ", "", "\n", " z", "  "][i % 5];
  });
  const first = pick[0].content;
  s += first.slice(0, -1) + " " + first + first;
  return s;
}

// Template.render declares its globals, strftime_now among them, and refuses to declare a
// variable twice. Let a strftime_now handed in by the caller replace the builtin, so the
// goldens render with the pinned date instead of the wall clock.
const declare = Environment.prototype.set;
Environment.prototype.set = function (name, value) {
  if (name === "strftime_now" && typeof value === "function") this.variables.delete(name);
  return declare.call(this, name, value);
};

function templatesFor(model, cfg, a) {
  const out = [];
  const fromConfig = (name) => {
    let src = cfg.chat_template;
    if (Array.isArray(src)) src = src.find((t) => t.name === "default").template;
    if (typeof src !== "string") throw new Error(`${model}: no chat_template in tokenizer_config.json`);
    out.push([name, src]);
  };
  switch (model) {
    case "gptoss":
      out.push(["gptoss", fs.readFileSync(a["gptoss-template"], "utf8")]);
      break;
    case "llama3_1":
      fromConfig("llama3_1");
      out.push(["llama3_x", fs.readFileSync(a["llama3x-template"], "utf8")]);
      break;
    default:
      fromConfig(model);
  }
  return out;
}

async function main() {
  const a = args();
  let disagreements = 0;
  fs.mkdirSync(a.out, { recursive: true });
  const fuzz = fuzzStrings(fuzzCount, fuzzSeed);
  const corpusText = corpus(corpusBytes, corpusSeed);
  const chatCases = chats();
  fs.writeFileSync(path.join(a.out, "inputs.json"), JSON.stringify({
    generator: "scripts/node/goldens.mjs with @lenml/tokenizers@3.7.2 and @huggingface/jinja@0.5.11",
    date: pinnedDate,
    texts,
    fuzz,
    chats: chatCases,
  }, null, 1) + "\n");
  fs.writeFileSync(path.join(a.out, "corpus.txt.gz"), zlib.gzipSync(Buffer.from(corpusText, "utf8"), { level: 9 }));

  for (const model of models) {
    const { tok, tokenizerJSON, tokenizerConfig: cfg } = loadTokenizer(path.join(a.models, model));
    const rust = loadRust(path.join(a.models, model));
    // ids encodes with both libraries and keeps the Rust library's ids.
    const ids = async (text, where) => {
      const js = encode(tok, text);
      const rs = await rustEncode(rust, text);
      const d = firstDiff(rs, js);
      if (d !== "") {
        disagreements++;
        console.error(`${model} ${where}: the Rust library and transformers.js ${d}; the Rust ids are written`);
      }
      return rs;
    };
    const special = specialText(tokenizerJSON.added_tokens);
    const g = {
      model,
      special_text: special,
      special_ids: await ids(special, "special text"),
      texts: {},
      fuzz: [],
      corpus_ids: await ids(corpusText, "corpus"),
      chats: {},
    };
    for (const [name, text] of texts) g.texts[name] = await ids(text, `text ${name}`);
    for (let i = 0; i < fuzz.length; i++) g.fuzz.push(await ids(fuzz[i], `fuzz[${i}]`));
    const vars = {};
    for (const k of ["bos_token", "eos_token", "pad_token", "unk_token"]) {
      const v = tokenString(cfg[k]);
      if (v !== undefined) vars[k] = v;
    }
    for (const [tname, src] of templatesFor(model, cfg, a)) {
      const tmpl = new Template(src);
      g.chats[tname] = [];
      for (const [name, messages, tools] of chatCases) {
        const ctx = { messages, add_generation_prompt: true, ...vars, strftime_now: strftime };
        if (tools) ctx.tools = tools;
        const rendered = tmpl.render(ctx);
        g.chats[tname].push({ name, rendered, ids: await ids(rendered, `chat ${tname}/${name}`) });
      }
    }
    const file = path.join(a.out, `${model}.json.gz`);
    fs.writeFileSync(file, zlib.gzipSync(Buffer.from(JSON.stringify(g)), { level: 9 }));
    console.error(`${file}: ${g.corpus_ids.length} corpus tokens`);
  }
  console.error(`goldens.mjs: ${disagreements} disagreement(s) between the Rust library and transformers.js`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
