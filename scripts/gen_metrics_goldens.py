#!/usr/bin/env python3
"""Emit vLLM-shaped Prometheus exposition text (format 0.0.4) for engine/metrics goldens.

Run with the system python3 that has prometheus_client (python3-prometheus-client):
    /usr/bin/python3 scripts/gen_metrics_goldens.py engine/metrics/testdata

Writes vllm_before.txt and vllm_after.txt: two scrapes of the same server with two
data-parallel engines ("0", "1"), so the Go tests can check deltas, means and
percentiles against values computed by hand from the observations below.
"""
import os
import sys

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
        5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
ITL = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0,
       7.5, 10.0, 20.0, 40.0, 80.0]
LAT = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
       60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0]
LABELS = ["model_name", "engine"]
MODEL = "m"


def build():
    r = CollectorRegistry()
    h = {
        "ttft": Histogram("vllm:time_to_first_token_seconds", "TTFT", LABELS, buckets=TTFT, registry=r),
        "itl": Histogram("vllm:inter_token_latency_seconds", "ITL", LABELS, buckets=ITL, registry=r),
        "e2e": Histogram("vllm:e2e_request_latency_seconds", "E2E", LABELS, buckets=LAT, registry=r),
        "queue": Histogram("vllm:request_queue_time_seconds", "queue", LABELS, buckets=LAT, registry=r),
        "prefill": Histogram("vllm:request_prefill_time_seconds", "prefill", LABELS, buckets=LAT, registry=r),
        "decode": Histogram("vllm:request_decode_time_seconds", "decode", LABELS, buckets=LAT, registry=r),
    }
    c = {
        "prompt": Counter("vllm:prompt_tokens", "prompt", LABELS, registry=r),
        "gen": Counter("vllm:generation_tokens", "gen", LABELS, registry=r),
        "pq": Counter("vllm:prefix_cache_queries", "queries", LABELS, registry=r),
        "ph": Counter("vllm:prefix_cache_hits", "hits", LABELS, registry=r),
        "ok": Counter("vllm:request_success", "ok", LABELS + ["finished_reason"], registry=r),
    }
    return r, h, c


def request(h, c, eng, ttft, itls, e2e, queue, prefill, decode, prompt, hits, reason="stop"):
    h["ttft"].labels(MODEL, eng).observe(ttft)
    for v in itls:
        h["itl"].labels(MODEL, eng).observe(v)
    h["e2e"].labels(MODEL, eng).observe(e2e)
    h["queue"].labels(MODEL, eng).observe(queue)
    h["prefill"].labels(MODEL, eng).observe(prefill)
    h["decode"].labels(MODEL, eng).observe(decode)
    c["prompt"].labels(MODEL, eng).inc(prompt)
    c["gen"].labels(MODEL, eng).inc(1 + len(itls))
    c["pq"].labels(MODEL, eng).inc(prompt)
    c["ph"].labels(MODEL, eng).inc(hits)
    c["ok"].labels(MODEL, eng, reason).inc()


def main(out):
    r, h, c = build()
    # Warmup traffic before the first scrape.
    request(h, c, "0", 0.3, [0.02], 1.2, 0.01, 0.3, 0.9, 100, 0)
    request(h, c, "1", 0.7, [0.03], 2.2, 0.02, 0.7, 1.5, 100, 0)
    with open(os.path.join(out, "vllm_before.txt"), "wb") as f:
        f.write(generate_latest(r))
    # The measured window: four requests, two per engine.
    request(h, c, "0", 0.05, [0.02, 0.03], 0.4, 0.001, 0.05, 0.35, 200, 100)
    request(h, c, "0", 0.15, [0.04, 0.06], 0.9, 0.002, 0.15, 0.75, 300, 200)
    request(h, c, "1", 0.2, [0.02, 0.08], 1.2, 0.003, 0.2, 1.0, 400, 100)
    request(h, c, "1", 3.0, [0.12, 0.3], 6.0, 0.004, 3.0, 3.0, 100, 0, reason="length")
    with open(os.path.join(out, "vllm_after.txt"), "wb") as f:
        f.write(generate_latest(r))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "engine/metrics/testdata")
