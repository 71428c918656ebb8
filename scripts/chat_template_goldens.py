#!/usr/bin/env python3
"""Write the Jinja2 goldens of the chat-template corpus.

Every template of promptsize/hf/testdata/templates/index.json is rendered
with every conversation of conversations.json the way Hugging Face
transformers' apply_chat_template renders it (what vLLM, SGLang and mlx_lm
serve with): an ImmutableSandboxedEnvironment with trim_blocks and
lstrip_blocks, the loopcontrols extension, a {% generation %} block that
renders its body, tojson as json.dumps(ensure_ascii=False, sort_keys=False,
indent, separators), raise_exception, and strftime_now pinned to DATE so the
goldens are reproducible. tools and documents are passed as None when absent,
as transformers does; bos_token and eos_token come from SPECIAL.

The output, goldens.json.gz beside index.json, holds one record per
(template, conversation): the rendered text, or the error Jinja2 raised
(kind "raise_exception" for the template's own raise_exception, else the
Python exception's class). Go's tests read it; they need no Python.

The template files are not in the repository: they are read from the
shared data folder beside it, ../shared/data/chat-templates from the
repository root ($INFERBENCH_SHARED_DATA/chat-templates when that is set),
and each is checked against the sha256 index.json records before anything
is rendered. index.json, conversations.json, expressions.txt and what this
script writes stay in promptsize/hf/testdata/templates.

Usage (from any directory; needs Jinja2, tested with 3.1.6):

    python3 scripts/chat_template_goldens.py            # rewrite the goldens
    python3 scripts/chat_template_goldens.py --check    # verify the sha256s only

The file is written byte-identically when nothing changed (gzip mtime 0).

It also renders every line of expressions.txt (one-line templates that probe
Python's operators, Undefined and Markup) without variables, into
expressions.json.
"""

import datetime
import gzip
import hashlib
import io
import json
import os
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DIR = os.path.join(ROOT, "promptsize", "hf", "testdata", "templates")
# TEMPLATES holds the vendor template files, beside the repository.
TEMPLATES = os.path.join(
    os.environ.get("INFERBENCH_SHARED_DATA") or os.path.join(ROOT, "..", "shared", "data"), "chat-templates"
)

# DATE is what strftime_now formats; the Go test pins RenderOptions.Date to it.
DATE = datetime.datetime(2025, 3, 14, 9, 26, 53)
SPECIAL = {"bos_token": "<|bos|>", "eos_token": "<|eos|>"}


class TemplateRaised(jinja2.exceptions.TemplateError):
    """What raise_exception raises: a TemplateError, as in transformers."""


class AssistantTracker(Extension):
    """{% generation %}...{% endgeneration %} renders its body, as in transformers."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def raise_exception(message):
    raise TemplateRaised(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return DATE.strftime(fmt)


def environment():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, conv):
    try:
        tmpl = env.from_string(source)
    except Exception as e:  # a template Jinja2 cannot compile
        return {"error_kind": type(e).__name__, "error": str(e)}
    kwargs = dict(SPECIAL)
    kwargs.update(conv.get("vars", {}))
    try:
        out = tmpl.render(
            messages=conv["messages"],
            tools=conv.get("tools"),
            documents=None,
            add_generation_prompt=conv["add_generation_prompt"],
            **kwargs,
        )
    except TemplateRaised as e:
        return {"error_kind": "raise_exception", "error": str(e)}
    except Exception as e:
        return {"error_kind": type(e).__name__, "error": str(e)}
    return {"output": out}


def main():
    with open(os.path.join(DIR, "index.json"), encoding="utf-8") as f:
        index = json.load(f)
    if not os.path.isdir(TEMPLATES):
        sys.exit("%s is missing: the chat templates are kept beside the repository, in ../shared/data/chat-templates "
                 "from its root (or set INFERBENCH_SHARED_DATA to the folder that holds chat-templates/)"
                 % os.path.normpath(TEMPLATES))
    for t in index:
        with open(os.path.join(TEMPLATES, t["file"]), "rb") as f:
            got = hashlib.sha256(f.read()).hexdigest()
        if got != t["sha256"]:
            sys.exit("%s: sha256 %s, index says %s" % (t["file"], got, t["sha256"]))
    if "--check" in sys.argv[1:]:
        print("%d templates in %s, sha256s match" % (len(index), os.path.normpath(TEMPLATES)))
        return
    with open(os.path.join(DIR, "conversations.json"), encoding="utf-8") as f:
        convs = json.load(f)
    env = environment()
    records = []
    for t in index:
        with open(os.path.join(TEMPLATES, t["file"]), encoding="utf-8") as f:
            source = f.read()
        for conv in convs:
            rec = {"template": t["name"], "conversation": conv["name"]}
            rec.update(render(env, source, conv))
            records.append(rec)
    data = {
        "generator": "scripts/chat_template_goldens.py",
        "jinja2": jinja2.__version__,
        "date": DATE.isoformat(),
        "special": SPECIAL,
        "records": records,
    }
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz:
        gz.write(json.dumps(data, ensure_ascii=False, indent=0).encode("utf-8"))
    with open(os.path.join(DIR, "goldens.json.gz"), "wb") as f:
        f.write(buf.getvalue())
    with open(os.path.join(DIR, "expressions.txt"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    probes = []
    for line in lines:
        rec = {"template": line}
        rec.update(render(env, line, {"messages": [], "add_generation_prompt": False}))
        probes.append(rec)
    with open(os.path.join(DIR, "expressions.json"), "w", encoding="utf-8") as f:
        json.dump(probes, f, ensure_ascii=False, indent=1)
        f.write("\n")
    errors = sum(1 for r in records if "error" in r)
    print("%d templates x %d conversations: %d rendered, %d raised (Jinja2 %s)"
          % (len(index), len(convs), len(records) - errors, errors, jinja2.__version__))


if __name__ == "__main__":
    main()
