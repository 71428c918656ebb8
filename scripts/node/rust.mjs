// rust.mjs wraps tokenizers@0.23.2, Hugging Face's Rust tokenizers library (what vLLM and
// SGLang count with) with its prebuilt Node binary: the second golden source for token ids,
// beside @lenml/tokenizers (transformers.js). Where the two disagree the Rust library is
// the reference.
import path from "node:path";
import { Tokenizer } from "tokenizers";

// loadRust loads dir/tokenizer.json into the Rust library.
export function loadRust(dir) {
  return Tokenizer.fromFile(path.join(dir, "tokenizer.json"));
}

// rustEncode returns the ids of text with add_special_tokens=false.
export async function rustEncode(tok, text) {
  const enc = await tok.encode(text, null, { addSpecialTokens: false });
  return enc.getIds();
}

// firstDiff describes where two id lists differ, or returns "" when they are equal.
export function firstDiff(a, b) {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  if (i === a.length && i === b.length) return "";
  return `differ at ${i} (${a.length} vs ${b.length} ids): ${JSON.stringify(a.slice(i, i + 5))} vs ${JSON.stringify(b.slice(i, i + 5))}`;
}
