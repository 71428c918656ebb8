#!/usr/bin/env python3
"""Writes workload/testdata/synthetic_*: small synthetic traces and datasets
in every format the workload package reads, and synthetic_expected.json,
the figures the Go tests check the readers against, computed here by
Python's own json and csv modules, never by the code under test.

Every file is made up (seeded, so the output is the same on every run);
none holds a row of the public traces. The formats follow the public
releases described in workload/testdata/README.md.

Run from the repository root: python3 scripts/gen_workload_samples.py
The tests do not need Python: the files are committed. With --only NAME
it writes that one file and nothing else (for example --only
synthetic_qwen_traceA_1k.jsonl, the sample examples/bench-qwen replays),
so that adding a sample leaves every other file's bytes alone.

A sample a program carries inside itself (go:embed) is written into that
program's directory instead (DIRS): bench-qwen's.
"""
import argparse
import csv
import io
import json
import math
import os
import random

OUT = "workload/testdata"


# Samples that live beside the program that embeds them, not in OUT.
DIRS = {
    "synthetic_qwen_traceA_1k.jsonl": "examples/bench-qwen",
}


def write(name, text):
    with open(os.path.join(DIRS.get(name, OUT), name), "w", newline="") as f:
        f.write(text)


def hit_rate(rows, block):
    """Tokens of each row's leading blocks whose ids appeared in an
    earlier row (the last block by its real size), and all input tokens."""
    seen, hit, total = set(), 0, 0
    for r in rows:
        ids = r["hash_ids"]
        k = 0
        while k < len(ids) and ids[k] in seen:
            k += 1
        hit += min(k * block, r["input_length"])
        total += r["input_length"]
        seen.update(ids)
    return hit, total


class IDs:
    def __init__(self):
        self.n = 0

    def new(self, k):
        out = list(range(self.n, self.n + k))
        self.n += k
        return out


def mooncake(rng):
    """Mooncake FAST'25 form: integer ms from 0, 512-token blocks, a shared
    first block (as conversation_trace's id 0), some requests extending an
    earlier one's prefix."""
    B = 512
    ids = IDs()
    root = ids.new(1)
    rows, t = [], 0
    for i in range(24):
        t += rng.choice([0, 0, 0, 1000, 2999, 3000])
        n_in = rng.randint(300, 9000)
        n = math.ceil(n_in / B)
        if rows and rng.random() < 0.4:
            prev = rng.choice(rows)
            share = min(len(prev["hash_ids"]) - 1, n - 1)
            h = prev["hash_ids"][:share] + ids.new(n - share) if share > 0 else root + ids.new(n - 1)
        else:
            h = root + ids.new(n - 1)
        rows.append({"timestamp": t, "input_length": n_in, "output_length": rng.randint(1, 800), "hash_ids": h})
    return rows, B


def bailian_sessions(rng, sessions, span_s, max_turns, root_max=900, out_max=300, more_max=200):
    """Bailian form: float seconds, 16-token blocks, chat_id in time
    order, parent_chat_id -1 for a root, turn from 1. A follow-up's input
    is its parent's input and output plus new text, and its hash ids keep
    the parent's full blocks (the parent's partial last block changes)."""
    B = 16
    ids = IDs()
    system = [ids.new(12), ids.new(40)]  # two shared system prompts
    reqs = []
    for s in range(sessions):
        t = rng.uniform(0, span_s)
        kind = rng.choices(["text", "search", "image", "file"], [80, 10, 6, 4])[0]
        turns = min(max_turns, 1 + int(rng.expovariate(0.8)))
        prev = None
        for turn in range(1, turns + 1):
            out = rng.randint(5, out_max)
            if prev is None:
                sp = rng.choice([None, 0, 1])
                n_in = rng.randint(20, root_max)
                if sp is not None:
                    pre = system[sp]
                    n_in += len(pre) * B
                    h = pre + ids.new(math.ceil(n_in / B) - len(pre))
                else:
                    h = ids.new(math.ceil(n_in / B))
            else:
                t += rng.uniform(3, 90)
                n_in = prev["input_length"] + prev["output_length"] + rng.randint(5, more_max)
                keep = prev["input_length"] // B
                h = prev["hash_ids"][:keep] + ids.new(math.ceil(n_in / B) - keep)
            r = {"session": s, "timestamp": round(t, 3), "input_length": n_in, "output_length": out,
                 "type": kind, "turn": turn, "hash_ids": h, "parent": prev}
            reqs.append(r)
            prev = r
    reqs.sort(key=lambda r: r["timestamp"])
    t0 = reqs[0]["timestamp"]
    for i, r in enumerate(reqs):
        r["chat_id"] = i
        r["timestamp"] = round(r["timestamp"] - t0, 3)
    rows = []
    for r in reqs:
        rows.append({
            "chat_id": r["chat_id"],
            "parent_chat_id": r["parent"]["chat_id"] if r["parent"] else -1,
            "timestamp": r["timestamp"],
            "input_length": r["input_length"],
            "output_length": r["output_length"],
            "type": r["type"],
            "turn": r["turn"],
            "hash_ids": r["hash_ids"],
        })
    return rows, B, len({r["session"] for r in reqs})


def lognormal_int(rng, median, sigma, lo, hi):
    """An integer drawn from a lognormal of this median and shape, clamped
    to [lo, hi]."""
    return min(hi, max(lo, int(round(rng.lognormvariate(math.log(median), sigma)))))


def qwen_chat_trace(rng, rows_wanted=1000, root_rate=3.3, warmup_s=900, end_s=400):
    """A Bailian-format trace paced like a busy chat service (about 6
    requests a second, as qwen_traceA's ~43k rows over two hours), made up:

    - conversations start as a Poisson process at root_rate per second;
      after each turn the user sends another with probability 0.45 (at
      most 8 turns, so a mean of about 1.8), after a think time drawn
      lognormal with median 20 s (shape 0.9, clamped to 3 s .. 10 min);
    - a first turn's user text is lognormal with median 180 tokens
      (shape 1.1, 24 .. 8,000: every prompt above a chat template's own
      tokens); half the first turns begin with one of three shared
      system prompts of 128, 384 and 1,024 tokens (20, 20 and 10 per
      cent);
    - a follow-up's input is its parent's input and output plus new text,
      lognormal with median 50 tokens (shape 1.0, 2 .. 3,000), and keeps
      the parent's full 16-token blocks (the parent's partial last block
      changes); a conversation stops before its context passes 24,000;
    - every output is lognormal with median 110 tokens (shape 0.8,
      8 .. 512): modest, so that a replay against the embedded engine is
      quick;
    - type is text, search, image or file (80/10/6/4 per cent per
      conversation).

    The service runs warmup_s before the window opens, so the window is in
    steady state: its rows are the first rows_wanted at or after the
    opening (conversations are started until end_s, which must outlast
    them), timestamps from the first of them. chat_id numbers every
    request in time order, those before the window too, so a follow-up
    whose parent came before the window names a chat_id that is not in the
    file, as a window cut from a longer trace does."""
    B = 16
    ids = IDs()
    system = [ids.new(8), ids.new(24), ids.new(64)]
    reqs = []
    t = -warmup_s
    while True:
        t += rng.expovariate(root_rate)
        if t > end_s:
            break
        kind = rng.choices(["text", "search", "image", "file"], [80, 10, 6, 4])[0]
        sp = rng.choices([None, 0, 1, 2], [50, 20, 20, 10])[0]
        at, prev = t, None
        for turn in range(1, 9):
            out = lognormal_int(rng, 110, 0.8, 8, 512)
            if prev is None:
                n_in = lognormal_int(rng, 180, 1.1, 24, 8000)
                pre = system[sp] if sp is not None else []
                n_in += len(pre) * B
                h = pre + ids.new(math.ceil(n_in / B) - len(pre))
            else:
                n_in = prev["input_length"] + prev["output_length"] + lognormal_int(rng, 50, 1.0, 2, 3000)
                if n_in > 24000:
                    break
                at += min(600.0, max(3.0, rng.lognormvariate(math.log(20), 0.9)))
                keep = prev["input_length"] // B
                h = prev["hash_ids"][:keep] + ids.new(math.ceil(n_in / B) - keep)
            r = {"timestamp": round(at, 3), "input_length": n_in, "output_length": out,
                 "type": kind, "turn": turn, "hash_ids": h, "parent": prev, "seq": len(reqs)}
            reqs.append(r)
            prev = r
            if rng.random() >= 0.45:
                break
    reqs.sort(key=lambda r: (r["timestamp"], r["seq"]))
    for i, r in enumerate(reqs):
        r["chat_id"] = i
    kept = [r for r in reqs if r["timestamp"] >= 0][:rows_wanted]
    # No conversation started after end_s can put a row before it.
    assert len(kept) == rows_wanted and kept[-1]["timestamp"] < end_s, "end_s too short"
    t0 = kept[0]["timestamp"]
    return [{
        "chat_id": r["chat_id"],
        "parent_chat_id": r["parent"]["chat_id"] if r["parent"] else -1,
        "timestamp": round(r["timestamp"] - t0, 3),
        "input_length": r["input_length"],
        "output_length": r["output_length"],
        "type": r["type"],
        "turn": r["turn"],
        "hash_ids": r["hash_ids"],
    } for r in kept]

def jsonl(rows):
    return "".join(json.dumps(r) + "\n" for r in rows)


def trace_expect(rows, block, unit_ns):
    hit, total = hit_rate(rows, block)
    t0 = rows[0]["timestamp"]
    return {
        "rows": len(rows),
        "input": sum(r["input_length"] for r in rows),
        "output": sum(r["output_length"] for r in rows),
        "hit_tokens": hit,
        "hit_input": total,
        "last_at_ns": round((rows[-1]["timestamp"] - t0) * unit_ns),
    }


def burstgpt(rng):
    """BurstGPT form: integer seconds, two models, failures with Response
    tokens 0 (dropped by the reader, counted)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type"])
    t = 5
    rows = []
    for i in range(30):
        t += rng.choice([0, 1, 2, 7, 40])
        model = rng.choice(["ChatGPT", "ChatGPT", "GPT-4"])
        req = rng.randint(1, 3000)
        resp = 0 if rng.random() < 0.15 else rng.randint(1, 900)
        log = rng.choice(["Conversation log", "API log"])
        w.writerow([t, model, req, resp, req + resp, log])
        rows.append((t, model, req, resp))
    kept = [r for r in rows if r[3] > 0]
    gpt4 = [r for r in kept if r[1] == "GPT-4"]
    return out.getvalue(), {
        "rows": len(kept),
        "failed": len(rows) - len(kept),
        "input": sum(r[2] for r in kept),
        "output": sum(r[3] for r in kept),
        "last_at_ns": (kept[-1][0] - rows[0][0]) * 10**9,
        "gpt4_rows": len(gpt4),
        "gpt4_other": len(kept) - len(gpt4),
    }


def azure(rng):
    """Azure LLM inference form: dates with seven fractional digits."""
    out = io.StringIO()
    out.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    # 2023-11-16 18:15:46.6805900, in 100 ns ticks from the day's start
    ticks = ((18 * 60 + 15) * 60 + 46) * 10**7 + 6805900
    first = ticks
    rows = []
    for i in range(20):
        if i:
            ticks += rng.randint(0, 3 * 10**7)
        s, frac = divmod(ticks, 10**7)
        h, rem = divmod(s, 3600)
        m, sec = divmod(rem, 60)
        ctx, gen = rng.randint(2, 8000), rng.randint(1, 700)
        out.write(f"2023-11-16 {h:02d}:{m:02d}:{sec:02d}.{frac:07d},{ctx},{gen}\n")
        rows.append((ctx, gen))
    return out.getvalue(), {
        "rows": len(rows),
        "input": sum(r[0] for r in rows),
        "output": sum(r[1] for r in rows),
        "last_at_ns": (ticks - first) * 100,
    }


def sharegpt():
    convs = [
        {"id": "synthetic_0", "conversations": [
            {"from": "human", "value": "What is a KV cache?"},
            {"from": "gpt", "value": "It keeps the attention keys and values of earlier tokens."},
            {"from": "human", "value": "Why does prefix sharing help?"},
            {"from": "gpt", "value": "Requests that begin alike reuse the cached blocks."}]},
        {"id": "synthetic_1", "conversations": [
            {"from": "system", "value": "You answer in one sentence."},
            {"from": "human", "value": "Name a prime above 100."},
            {"from": "gpt", "value": "101."}]},
        {"id": "synthetic_2", "conversations": []},
        {"id": "synthetic_3", "conversation": [
            {"from": "user", "value": "Summarise: tokens arrive in chunks."},
            {"from": "chatgpt", "value": "Output is streamed."},
            {"from": "user", "value": "Shorter?"},
            {"from": "assistant", "value": "Streaming."},
            {"from": "user", "value": "One word again?"},
            {"from": "assistant", "value": "Streamed."}]},
        {"id": "synthetic_4", "conversations": [
            {"from": "gpt", "value": "Hello! How can I help?"},
            {"from": "human", "value": "Tell me about \u00fcnicode \u2014 and \"quotes\"."},
            {"from": "gpt", "value": "Sure."}]},
        {"id": 5, "conversations": [
            {"from": "gpt", "value": "A reply with no question."}]},
    ]
    text = json.dumps(convs, indent=2, ensure_ascii=False) + "\n"
    first = [c for c in convs if any(t["from"] in ("human", "user") for t in c.get("conversations", c.get("conversation", [])))]
    turns = sum(sum(1 for t in c.get("conversations", c.get("conversation", [])) if t["from"] in ("human", "user")) for c in convs)
    return text, {"rows": len(first), "no_user": len(convs) - len(first), "turn_rows": turns}


def custom():
    rows = [
        {"prompt": "Write a haiku about latency.", "output_tokens": 32},
        {"prompt": "Explain prefill and decode."},
        {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is TTFT?"}], "output_tokens": 64},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "Two "}, {"type": "text", "text": "parts."}]}], "output_tokens": 8},
        {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Bye"}]},
    ]
    return jsonl(rows), {"rows": len(rows), "output": sum(r.get("output_tokens", 0) for r in rows)}


# Samples written by --only NAME, each from its own seed, so that none
# draws from another's random stream.
ONLY = {
    "synthetic_qwen_traceA_1k.jsonl": lambda: jsonl(qwen_chat_trace(random.Random(1919))),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(ONLY), help="write this one file and nothing else")
    args = ap.parse_args()
    if args.only:
        write(args.only, ONLY[args.only]())
        return
    rng = random.Random(20250101)
    expected = {}

    rows, B = mooncake(rng)
    write("synthetic_mooncake.jsonl", jsonl(rows))
    expected["synthetic_mooncake.jsonl"] = trace_expect(rows, B, 10**6)

    rows, B, sessions = bailian_sessions(random.Random(7), 12, 120, 4)
    write("synthetic_bailian.jsonl", jsonl(rows))
    expected["synthetic_bailian.jsonl"] = trace_expect(rows, B, 10**9) | {"sessions": sessions}

    rows, B, sessions = bailian_sessions(random.Random(1000), 600, 1800, 5, root_max=500, out_max=150, more_max=100)
    rows = rows[:1000]
    write("synthetic_bailian_1k.jsonl", jsonl(rows))
    roots = sum(1 for r in rows if r["parent_chat_id"] == -1)
    expected["synthetic_bailian_1k.jsonl"] = trace_expect(rows, B, 10**9) | {"sessions": roots}

    text, e = burstgpt(rng)
    write("synthetic_burstgpt.csv", text)
    expected["synthetic_burstgpt.csv"] = e

    text, e = azure(rng)
    write("synthetic_azure.csv", text)
    expected["synthetic_azure.csv"] = e

    text, e = sharegpt()
    write("synthetic_sharegpt.json", text)
    expected["synthetic_sharegpt.json"] = e

    text, e = custom()
    write("synthetic_custom.jsonl", text)
    expected["synthetic_custom.jsonl"] = e

    write("synthetic_expected.json", json.dumps(expected, indent=2, sort_keys=True) + "\n")

    for name, text in ONLY.items():
        write(name, text())


if __name__ == "__main__":
    main()
