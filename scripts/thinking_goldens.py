#!/usr/bin/env python3
"""Write the Jinja2 goldens of the thinking controls on real chat templates.

A reasoning model's chat template renders differently with the variables a
request's thinking control makes the server pass (chat_template_kwargs, or
vLLM's reasoning_effort): Qwen3's writes an empty <think>\\n\\n</think>\\n\\n
into the generation prompt when enable_thinking is false, gpt-oss's prints
"Reasoning: <effort>" in its system message. This script renders a few
conversations through

  - Qwen3's template (testdata/models/qwen3/tokenizer_config.json) with no
    variable, with {enable_thinking: true, thinking: true} and with
    {enable_thinking: false, thinking: false};
  - gpt-oss's template (gpt-oss-20b-Q8_0.jinja of the Go module
    github.com/ardanlabs/jinja, the one promptsize/hf's goldens use: the
    model's tokenizer_config.json has none) with no variable and with
    {reasoning_effort: low | medium | high};

the variables being exactly those engine.Thinking.TemplateVars gives, with
Python's Jinja2 under transformers' settings (the environment of
chat_template_goldens.py: trim_blocks, lstrip_blocks, loop controls, tojson
as json.dumps, strftime_now pinned to its DATE), add_generation_prompt true,
and the model's own bos, eos, pad and unk tokens.

It writes promptsize/hf/testdata/thinking.json: each template's sha256 (the
Go test checks it renders the same source) and every rendering. The token
ids of each rendering are added by scripts/node/thinking_ids.mjs (Hugging
Face's Rust tokenizers library, checked against transformers.js), which
scripts/testdata.sh runs after this script under REGEN_GOLDENS=1. Go's tests
read the file; they need neither Python nor Node.

Usage (needs Jinja2, tested with 3.1.6):

    python3 scripts/thinking_goldens.py [--models DIR] [--gptoss-template FILE]

--models defaults to testdata/models (scripts/testdata.sh fetches it);
--gptoss-template to the file in the Go module cache (go list -m).
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys

import jinja2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chat_template_goldens import DATE, environment  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "promptsize", "hf", "testdata", "thinking.json")

CONVERSATIONS = [
    ["one_user", [{"role": "user", "content": "What is 17 * 23?"}]],
    [
        "system_user",
        [
            {"role": "system", "content": "You are a careful calculator. Answer with the number only."},
            {"role": "user", "content": "What is 17 * 23?"},
        ],
    ],
    [
        "multi_turn",
        [
            {"role": "user", "content": "What is 17 * 23?"},
            {"role": "assistant", "content": "391."},
            {"role": "user", "content": "And 18 * 23? Say how you got it."},
        ],
    ],
]

# SETTINGS are the thinking controls rendered per template: a name and the
# variables engine.Thinking.TemplateVars gives for it (None: no variable).
SETTINGS = {
    "qwen3": [
        ["default", None],
        ["on", {"enable_thinking": True, "thinking": True}],
        ["off", {"enable_thinking": False, "thinking": False}],
    ],
    "gptoss": [
        ["default", None],
        ["low", {"reasoning_effort": "low"}],
        ["medium", {"reasoning_effort": "medium"}],
        ["high", {"reasoning_effort": "high"}],
    ],
}


def token_string(v):
    """A special token of tokenizer_config.json: a string, an AddedToken object or null."""
    if v is None or isinstance(v, str):
        return v
    return v.get("content")


def special_tokens(cfg):
    out = {}
    for k in ("bos_token", "eos_token", "pad_token", "unk_token"):
        v = token_string(cfg.get(k))
        if v:
            out[k] = v
    return out


def gptoss_default():
    p = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", "github.com/ardanlabs/jinja"],
        cwd=ROOT, capture_output=True, text=True,
    )
    if p.returncode != 0:
        sys.exit("go list -m github.com/ardanlabs/jinja failed (%s); pass --gptoss-template FILE" % p.stderr.strip())
    d = p.stdout.strip()
    return os.path.join(d, "testdata", "templates", "gpt-oss-20b-Q8_0.jinja")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=os.path.join(ROOT, "testdata", "models"))
    ap.add_argument("--gptoss-template")
    a = ap.parse_args()
    gptoss_file = a.gptoss_template or gptoss_default()

    templates = {}
    with open(os.path.join(a.models, "qwen3", "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    src = cfg["chat_template"]
    if not isinstance(src, str):
        sys.exit("qwen3: expected chat_template to be a string in tokenizer_config.json")
    templates["qwen3"] = (src, special_tokens(cfg))
    with open(os.path.join(a.models, "gptoss", "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    with open(gptoss_file, encoding="utf-8") as f:
        templates["gptoss"] = (f.read(), special_tokens(cfg))

    env = environment()
    out = {
        "generator": "scripts/thinking_goldens.py (renderings), scripts/node/thinking_ids.mjs (ids)",
        "jinja2": jinja2.__version__,
        "date": DATE.isoformat(),
        "templates": {},
        "cases": [],
    }
    for name, (source, special) in templates.items():
        out["templates"][name] = {
            "sha256": hashlib.sha256(source.encode("utf-8")).hexdigest(),
            "special": special,
        }
        tmpl = env.from_string(source)
        for setting, variables in SETTINGS[name]:
            for conv, messages in CONVERSATIONS:
                kwargs = dict(special)
                kwargs.update(variables or {})
                rendered = tmpl.render(
                    messages=messages, tools=None, documents=None, add_generation_prompt=True, **kwargs
                )
                out["cases"].append(
                    {
                        "template": name,
                        "setting": setting,
                        "vars": variables,
                        "conversation": conv,
                        "messages": messages,
                        "rendered": rendered,
                    }
                )
    # Keep the ids an earlier run of thinking_ids.mjs added while the
    # renderings are unchanged, so that this script alone leaves the file as it was.
    try:
        with open(OUT, encoding="utf-8") as f:
            old = {(c["template"], c["setting"], c["conversation"]): c for c in json.load(f)["cases"]}
    except (OSError, ValueError, KeyError):
        old = {}
    for c in out["cases"]:
        prev = old.get((c["template"], c["setting"], c["conversation"]))
        if prev is not None and prev.get("rendered") == c["rendered"] and "ids" in prev:
            c["ids"] = prev["ids"]
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("%s: %d renderings (Jinja2 %s)" % (os.path.relpath(OUT, ROOT), len(out["cases"]), jinja2.__version__))


if __name__ == "__main__":
    main()
