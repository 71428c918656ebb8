// Inputs shared by the golden generator and the speed script: the text set, the seeded
// adversarial strings, the chat cases and the mixed corpus. Everything here is
// deterministic: the same version of this file always produces the same inputs.

// mulberry32 is a small seeded PRNG: the same seed gives the same sequence everywhere.
export function mulberry32(seed) {
  let a = seed >>> 0;
  return function () {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const goCode = `package main

import "fmt"

// Sum adds the numbers.
func Sum(xs []int) (total int) {
	for _, x := range xs {
		total += x
	}
	return total
}

func main() {
	fmt.Println(Sum([]int{1, 2, 3})) // 6
}
`;

const pyCode = `def fib(n: int) -> int:
    """Return the n-th Fibonacci number."""
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


if __name__ == "__main__":
    print([fib(i) for i in range(10)])  # [0, 1, 1, 2, ...]
`;

// texts is the varied text set: each entry is [name, text].
export const texts = [
  ["ascii", "Hello, world! This is a simple ASCII sentence with punctuation."],
  ["a_space_x1", "a ".repeat(1)],
  ["a_space_x2", "a ".repeat(2)],
  ["a_space_x7", "a ".repeat(7)],
  ["a_space_x64", "a ".repeat(64)],
  ["a_space_x1000", "a ".repeat(1000)],
  ["a_x50", "a".repeat(50)],
  ["numbers", "1234567890 3.14159 -42 1,000,000 2026-11-29 0x1F 1e10 12345678901234567890 ½ ²³ ٣٤٥"],
  ["go_code", goCode],
  ["python_code", pyCode],
  ["cjk", "我们今天去公园散步，然后在湖边吃午饭。日本語のテキストもあります。カタカナ、ひらがな。"],
  ["korean", "안녕하세요. 오늘 날씨가 정말 좋네요! 한국어 문장입니다."],
  ["emoji", "👨‍👩‍👧‍👦 family, 🏳️‍🌈 flag, 🇫🇷🇯🇵🇺🇸 flags, 👍🏽 thumbs, 🤖🚀✨"],
  ["whitespace_runs", "a  b   c    d\t\te\t \n\n\n  f     \n    g        h\u000b\u000ci"],
  ["crlf", "line one\r\nline two\r\n\r\nline four\r\n\r\r\n"],
  ["contractions", "I'm sure you've seen it; they'll say it's theirs. We'd've won. DON'T SHE'S it’s"],
  ["url", "https://example.com/path/to/page.html?query=1&b=two#frag and http://127.0.0.1:8080/v1"],
  ["json", '{"name": "inferbench", "version": 1, "tags": ["a", "b"], "nested": {"x": null, "y": true, "z": -1.5e3}}'],
  ["accents_nfc", "café naïve résumé e\u0301 A\u030a o\u0308 n\u0303 Å ﬁ ＡＢＣ"],
  ["rtl", "مرحبا بالعالم — שלום עולם. العربية والعبرية"],
  ["devanagari_thai", "नमस्ते दुनिया, यह एक वाक्य है। สวัสดีชาวโลก ภาษาไทย"],
  ["markdown", "# Title\n\n- item **bold** _it_ `code`\n\n```go\nfmt.Println(1)\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> quote\n"],
  ["empty", ""],
  ["one_space", " "],
  ["newlines", "\n\n\n"],
  ["rule_runs", "==== ---- ____ **** ~~~~ \n\n\n\n ...."],
  ["camel_case", "HelloWorld CamelCase iPhone McDonald's XMLHttpRequest"],
  ["long_words", "supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopic"],
  ["indented", "    if x:\n        return y\n\t\tdeep\n  \n"],
  ["punctuation", "!!!??? ... ,,, ;;; ::: --> <== (( )) [[ ]] {{ }} @#$%^&*"],
  ["long_digits", "3141592653589793238462643383279502884197169399375105820974944"],
  ["edge_spaces", "   leading and trailing   "],
  ["unicode_spaces", "a\u00a0b\u3000c\u2009d\u202fe\u2028f\u0085g"],
  ["sentencepiece_marks", "▁hello ▁▁world ▁"],
  ["rare_chars", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ 𓀀 ⅷ ㈱ ﷺ \u200b\u200d\ufe0f"],
  ["mixed_scripts", "English, Русский, Ελληνικά, 中文, 日本語, 한국어, עברית, العربية, हिन्दी"],
];

// fuzzPool holds the fragments that random strings are built from: pieces that have
// tripped tokenizers before (whitespace runs, contractions, digits, combining marks,
// special-token look-alikes, scripts without spaces, emoji sequences).
const fuzzPool = [
  " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2009",
  "a", "b", "Z", "é", "e\u0301", "A\u030a", "ß", "ﬁ", "İ", "ǅ",
  "the", " the", "The", "HELLO", "wOrLd", "'s", "'S", "'t", "'re", "'ve", "'m", "'ll", "'d", "’s",
  "0", "1", "12", "123", "1234", "3.14", "-7", "٣", "²", "½",
  ".", ",", "!", "?", "...", "--", "==", "__", "**", "//", "/", "\\", "<", ">", "|", "{", "}", "(", ")", "[", "]", "\"", "'", "`", "#", "@", "$", "%", "&", "+", "~", "^", ";", ":",
  "<|", "|>", "<s>", "</s>", "<bos>", "<eos>", "<|im_start|>", "<|im_end|>", "<|endoftext|>",
  "<start_of_turn>", "<end_of_turn>", "<|start_header_id|>", "<|eot_id|>", "<|start|>", "<|end|>",
  "<｜User｜>", "<｜Assistant｜>", "<unk>", "<pad>", "<0x41>",
  "我", "们", "中文", "日本", "カタカナ", "ひらがな", "한국", "안녕", "ภาษา", "ไทย", "नम", "स्ते", "مرحبا", "שלום",
  "👍", "👍🏽", "👨‍👩‍👧", "🇫🇷", "🏳️‍🌈", "✨", "\u200d", "\ufe0f", "\u200b",
  "▁", "▁▁", "Ġ", "Ċ", "ĠĠ",
  "http://", "x.com", "foo_bar", "camelCase", "snake_case", "0x", "fn(", ");",
];

// fuzzStrings returns n seeded random strings of 1 to 40 fragments each.
export function fuzzStrings(n, seed) {
  const rnd = mulberry32(seed);
  const out = [];
  for (let i = 0; i < n; i++) {
    const parts = 1 + Math.floor(rnd() * 40);
    let s = "";
    for (let j = 0; j < parts; j++) {
      const r = rnd();
      if (r < 0.85) {
        s += fuzzPool[Math.floor(rnd() * fuzzPool.length)];
      } else if (r < 0.95) {
        // a run of one fragment
        const f = fuzzPool[Math.floor(rnd() * 12)];
        s += f.repeat(2 + Math.floor(rnd() * 9));
      } else {
        // a random BMP letter outside the surrogate range
        let cp = 0x20 + Math.floor(rnd() * (0xd7ff - 0x20));
        s += String.fromCodePoint(cp);
      }
    }
    out.push(s);
  }
  return out;
}

const words = (
  "time person year way day thing man world life hand part child eye woman place work week case point " +
  "government company number group problem fact be have do say get make go know take see come think look " +
  "want give use find tell ask seem feel try leave call good new first last long great little own other old " +
  "right big high different small large next early young important few public bad same able to of in for on " +
  "with at by from up about into over after benchmark latency throughput token prefill decode cache cluster " +
  "tensor memory bandwidth kernel scheduler request response engine model inference measurement"
).split(" ");

const prose = [
  "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness.",
  "Call me Ishmael. Some years ago—never mind how long precisely—having little or no money in my purse, I thought I would sail about a little.",
  "In a hole in the ground there lived a hobbit; not a nasty, dirty, wet hole, filled with the ends of worms.",
  "The quick brown fox jumps over the lazy dog while the five boxing wizards jump quickly.",
  "Whereas recognition of the inherent dignity and of the equal rights of all members of the human family is the foundation of freedom.",
];

const cjk = [
  "机器学习模型的推理速度取决于内存带宽和计算能力。",
  "今日は良い天気ですね。散歩に行きましょう。",
  "대규모 언어 모델의 처리량을 측정합니다.",
  "预填充阶段是计算密集型的，而解码阶段是内存密集型的。",
];

// corpus returns the deterministic mixed corpus of about `bytes` UTF-8 bytes: prose,
// random words, code, numbers, CJK and Korean, whitespace and markup.
export function corpus(bytes, seed) {
  const rnd = mulberry32(seed);
  const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
  const parts = [];
  let size = 0;
  const push = (s) => {
    parts.push(s);
    size += Buffer.byteLength(s, "utf8");
  };
  while (size < bytes) {
    const r = rnd();
    if (r < 0.3) {
      push(pick(prose) + (rnd() < 0.5 ? " " : "\n"));
    } else if (r < 0.55) {
      const n = 5 + Math.floor(rnd() * 30);
      const ws = [];
      for (let i = 0; i < n; i++) {
        let w = pick(words);
        if (rnd() < 0.1) w = w[0].toUpperCase() + w.slice(1);
        ws.push(w);
      }
      push(ws.join(" ") + pick([". ", ".\n", "? ", "! ", ", ", ";\n\n"]));
    } else if (r < 0.7) {
      push(pick([goCode, pyCode]));
    } else if (r < 0.82) {
      const n = 1 + Math.floor(rnd() * 8);
      const xs = [];
      for (let i = 0; i < n; i++) xs.push(String(Math.floor(rnd() * 10 ** (1 + Math.floor(rnd() * 9)))));
      push(xs.join(pick([", ", " ", "\t", " | "])) + "\n");
    } else if (r < 0.94) {
      push(pick(cjk));
    } else {
      push(pick(["\n\n", "    ", "\t\t", "  \n", "---\n", "## Section\n", "* item\n", "\r\n"]));
    }
  }
  return parts.join("");
}

// aSpaceCounts are the lengths of the "a "×n user messages of the chat cases.
export const aSpaceCounts = [0, 1, 2, 3, 4, 5, 8, 10, 16, 31, 32, 50, 64, 100, 128, 256, 500, 1000, 2000];

// tools is the tools case's tool list; its key order is deliberately not sorted.
export const tools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Get the current weather for a city.",
      parameters: {
        type: "object",
        properties: {
          location: { type: "string", description: "City and country, e.g. Paris, France" },
          unit: { type: "string", enum: ["celsius", "fahrenheit"] },
        },
        required: ["location"],
      },
    },
  },
];

// chats returns the chat cases: [name, messages, tools or null].
export function chats() {
  const out = [];
  for (const n of aSpaceCounts) {
    out.push([`a_space_x${n}`, [{ role: "user", content: "a ".repeat(n) }], null]);
  }
  out.push(["prompt_summarize", [{ role: "user", content: "Summarize the following paragraph in two sentences:\n\n" + prose[1] + " " + prose[4] }], null]);
  out.push(["prompt_code", [{ role: "user", content: "Explain what this Go function does and suggest one improvement:\n\n```go\n" + goCode + "```" }], null]);
  out.push(["prompt_translate", [{ role: "user", content: "Translate into French and Japanese: \"The benchmark measured 1,234 tokens per second at a batch size of 8.\"" }], null]);
  out.push(["prompt_cjk", [{ role: "user", content: "请用三句话解释什么是预填充和解码。" + cjk[3] }], null]);
  out.push(["prompt_json", [{ role: "user", content: "Return a JSON object with keys \"name\" and \"age\" for: Ada Lovelace, 36.\n{\"name\": \"\", \"age\": 0}" }], null]);
  out.push(["multi_turn_system", [
    { role: "system", content: "You are a concise assistant. Answer in one sentence." },
    { role: "user", content: "What is the capital of France?" },
    { role: "assistant", content: "The capital of France is Paris." },
    { role: "user", content: "And of Japan?" },
  ], null]);
  out.push(["multi_turn", [
    { role: "user", content: "Give me a number between 1 and 10." },
    { role: "assistant", content: "7" },
    { role: "user", content: "Double it, then add 3." },
  ], null]);
  out.push(["tools", [{ role: "user", content: "What's the weather like in Paris today?" }], tools]);
  return out;
}
