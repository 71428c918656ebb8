#!/usr/bin/env python3
"""Write real prometheus_client expositions of vLLM's and SGLang's families, with the truth.

Run with the system python3 that has Debian's python3-prometheus-client
(`apt-get install python3-prometheus-client`; these goldens were written with
prometheus_client 0.16.0, Debian package 0.16.0-0.1, under Python 3.11):

    /usr/bin/python3 scripts/gen_server_goldens.py engine/metrics/testdata/prom

The families are declared as the servers declare them: names, label names and
default buckets as in vLLM's vllm/v1/metrics/loggers.py and buckets.py
(PrometheusStatLogger; every child made at start by make_per_engine) and
SGLang's python/sglang/srt/metrics/collector.py (TokenizerMetricsCollector and
SchedulerMetricsCollector; a child made at its first observation, served
through a MultiProcessCollector as SGLang's --enable-metrics does, so no
_created series). SGLang's inter-token latency is observed as SGLang does it:
the whole interval added to _sum, num_new_tokens added to the bucket of
interval/num_new_tokens, so _count counts tokens.

Each scenario writes one exposition per scrape: "fresh" before any request,
then after each batch of requests. truth.json lists, per scenario and scrape,
what was observed since the previous scrape: per histogram family every value
(SGLang's token-weighted ITL as num_new_tokens copies of interval/num_new_tokens)
and the sum the server added; per counter family the increment. The Go tests
read only the text files and truth.json; they never run Python.

The clock prometheus_client stamps _created with is replaced by a fixed one,
so that the output is the same on every run; observations come from a seeded
generator.
"""
import json
import os
import random
import shutil
import sys
import tempfile

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import metrics as _pc_metrics
from prometheus_client import multiprocess, values


class Clock:
    """Stands in for the time module inside prometheus_client.metrics."""

    def __init__(self):
        self.now = 0.0

    def time(self):
        self.now += 0.001
        return self.now


CLOCK = Clock()
_pc_metrics.time = CLOCK

# vLLM (vllm/v1/metrics/buckets.py and loggers.py).
VLLM_TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
             5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
VLLM_ITL = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0,
            7.5, 10.0, 20.0, 40.0, 80.0]
VLLM_LAT = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
            60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0]
VLLM_ITER = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
VLLM_LABELS = ["model_name", "engine"]
VLLM_REASONS = ["stop", "length", "abort"]

# SGLang (python/sglang/srt/metrics/collector.py defaults).
SGL_TTFT = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400]
SGL_E2E = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400,
           600, 1200, 1800, 2400]
SGL_ITL = [0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040,
           0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000]
SGL_QUEUE = [0.0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90,
             100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800,
             2000, 2500, 3000]
SGL_TOKENIZER_LABELS = {"model_name": "m", "engine_type": "unified"}
SGL_SCHEDULER_LABELS = {"model_name": "m", "engine_type": "unified", "tp_rank": "0",
                        "pp_rank": "0", "moe_ep_rank": "0"}


class Truth:
    """What was observed since the last scrape, per family."""

    def __init__(self):
        self.fams = {}

    def hist(self, name, values, added):
        f = self.fams.setdefault(name, {"kind": "histogram", "obs": [], "sum": 0.0})
        f["obs"].extend(values)
        f["sum"] += added

    def counter(self, name, inc):
        f = self.fams.setdefault(name, {"kind": "counter", "inc": 0.0})
        f["inc"] += inc

    def take(self):
        out, self.fams = self.fams, {}
        return out


class VLLM:
    """PrometheusStatLogger's timing and token families."""

    def __init__(self, engines, eager):
        self.r = CollectorRegistry()
        self.engines = engines
        self.truth = Truth()
        r, L = self.r, VLLM_LABELS

        def hist(name, doc, buckets):
            return Histogram(name, doc, L, buckets=buckets, registry=r)

        self.running = Gauge("vllm:num_requests_running", "Number of requests in model execution batches.", L, registry=r)
        self.waiting = Gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", L, registry=r)
        self.kv = Gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", L, registry=r)
        self.pq = Counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", L, registry=r)
        self.ph = Counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", L, registry=r)
        self.preempt = Counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", L, registry=r)
        self.prompt = Counter("vllm:prompt_tokens", "Number of prefill tokens processed.", L, registry=r)
        self.gen = Counter("vllm:generation_tokens", "Number of generation tokens processed.", L, registry=r)
        self.success = Counter("vllm:request_success", "Count of successfully processed requests.", L + ["finished_reason"], registry=r)
        self.iter = hist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", VLLM_ITER)
        self.ttft = hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", VLLM_TTFT)
        self.itl = hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", VLLM_ITL)
        self.tpot = hist("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", VLLM_ITL)
        self.e2e = hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", VLLM_LAT)
        self.queue = hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", VLLM_LAT)
        self.inference = hist("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", VLLM_LAT)
        self.prefill = hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", VLLM_LAT)
        self.decode = hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", VLLM_LAT)
        if eager:
            # make_per_engine: one child per engine at start; every finish
            # reason's child of request_success too.
            for e in engines:
                for m in (self.running, self.waiting, self.kv, self.pq, self.ph, self.preempt, self.prompt,
                          self.gen, self.iter, self.ttft, self.itl, self.tpot, self.e2e, self.queue,
                          self.inference, self.prefill, self.decode):
                    m.labels("m", e)
                for reason in VLLM_REASONS:
                    self.success.labels("m", e, reason)

    def observe(self, metric, e, values):
        child = metric.labels("m", e)
        for v in values:
            child.observe(v)
        self.truth.hist(metric._name, values, sum_seq(values))

    def inc(self, metric, labels, v):
        metric.labels(*labels).inc(v)
        self.truth.counter(metric._name + "_total", v)

    def request(self, rng, e):
        prompt = rng.randint(40, 3000)
        hits = rng.choice([0, 0, prompt // 2, prompt - prompt % 16])
        n = rng.randint(2, 48)
        queue = us(rng.choice([rng.uniform(0.00005, 0.0012), rng.uniform(0.00005, 0.0012), rng.uniform(0.0, 0.02)]))
        prefill = us(rng.lognormvariate(-3.2, 0.6))
        ttft = us(queue + prefill + rng.uniform(0.0005, 0.003))
        itls = [us(rng.lognormvariate(-4.6, 0.35)) for _ in range(n - 1)]
        if rng.random() < 0.3:
            i = rng.randrange(len(itls))
            itls[i] = us(itls[i] + rng.uniform(0.03, 0.2))  # a step beside another prefill
        decode = us(sum_seq(itls))
        reason = "length" if rng.random() < 0.4 else "stop"
        # Prefill: the scheduler's iteration, the first token.
        self.inc(self.pq, ("m", e), prompt)
        self.inc(self.ph, ("m", e), hits)
        self.inc(self.prompt, ("m", e), prompt)
        self.inc(self.gen, ("m", e), 1)
        self.observe(self.iter, e, [prompt - hits + 1])
        self.observe(self.ttft, e, [ttft])
        for v in itls:
            self.inc(self.gen, ("m", e), 1)
            self.observe(self.iter, e, [1])
            self.observe(self.itl, e, [v])
        # Finish.
        self.inc(self.success, ("m", e, reason), 1)
        self.observe(self.e2e, e, [us(ttft + decode + rng.uniform(0.0002, 0.002))])
        self.observe(self.queue, e, [queue])
        self.observe(self.prefill, e, [prefill])
        self.observe(self.inference, e, [us(prefill + decode)])
        self.observe(self.decode, e, [decode])
        self.observe(self.tpot, e, [us(decode / (n - 1))])

    def idle(self):
        for e in self.engines:
            self.running.labels("m", e).set(0)
            self.waiting.labels("m", e).set(0)
            self.kv.labels("m", e).set(0)

    def run(self, rng, requests):
        for i in range(requests):
            self.request(rng, self.engines[i % len(self.engines)])
        self.idle()


class SGLang:
    """TokenizerMetricsCollector and the scheduler's queue time, lazily labelled."""

    def __init__(self):
        self.truth = Truth()
        # SGLang registers on the default registry; each process here gets
        # its own, which the scrape never reads: values go through the
        # multiprocess directory.
        r = CollectorRegistry()
        L, S = list(SGL_TOKENIZER_LABELS), list(SGL_SCHEDULER_LABELS)
        self.prompt = Counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.", L, registry=r)
        self.gen = Counter("sglang:generation_tokens_total", "Number of generation tokens processed.", L, registry=r)
        self.cached = Counter("sglang:cached_tokens_total", "Number of cached prompt tokens.", L, registry=r)
        self.requests = Counter("sglang:num_requests_total", "Number of requests processed.", L, registry=r)
        self.aborted = Counter("sglang:num_aborted_requests_total", "Number of requests aborted.", L, registry=r)
        self.ttft = Histogram("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", L, buckets=SGL_TTFT, registry=r)
        self.itl = Histogram("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", L, buckets=SGL_ITL, registry=r)
        self.e2e = Histogram("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", L, buckets=SGL_E2E, registry=r)
        self.queue = Histogram("sglang:queue_time_seconds", "Histogram of queueing time in seconds.", S, buckets=SGL_QUEUE, registry=r)
        # SGLang's gauges are "mostrecent", which 0.16 lacks; "max" reads
        # the same from one process.
        self.running = Gauge("sglang:num_running_reqs", "The number of running requests.", S, multiprocess_mode="max", registry=r)
        self.waiting = Gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", S, multiprocess_mode="max", registry=r)

    def scrape(self):
        r = CollectorRegistry()
        r.register(Sorted(multiprocess.MultiProcessCollector(None)))
        return generate_latest(r)

    def request(self, rng, cached_ok):
        labels = SGL_TOKENIZER_LABELS
        prompt = rng.randint(40, 3000)
        cached = rng.choice([0, prompt // 3, prompt - 1]) if cached_ok else 0
        queue = us(rng.choice([0.0, rng.uniform(0.0, 0.004), rng.uniform(0.0, 0.004)]))
        self.queue.labels(**SGL_SCHEDULER_LABELS).observe(queue)
        self.truth.hist("sglang:queue_time_seconds", [queue], queue)
        ttft = us(queue + rng.lognormvariate(-2.9, 0.5))
        self.ttft.labels(**labels).observe(ttft)
        self.truth.hist("sglang:time_to_first_token_seconds", [ttft], ttft)
        n, total = 1, ttft
        while n < rng.randint(4, 60):
            # One output batch: --stream-interval or a slow step can
            # carry several tokens.
            k = rng.choice([1, 1, 1, 2, 3])
            interval = us(sum_seq([rng.lognormvariate(-5.0, 0.4) for _ in range(k)]))
            observe_itl(self.itl.labels(**labels), interval, k)
            self.truth.hist("sglang:inter_token_latency_seconds", [interval / k] * k, interval)
            n += k
            total += interval
        e2e = us(total + rng.uniform(0.0002, 0.002))
        # observe_one_finished_request.
        self.prompt.labels(**labels).inc(prompt)
        self.truth.counter("sglang:prompt_tokens_total", prompt)
        self.gen.labels(**labels).inc(n)
        self.truth.counter("sglang:generation_tokens_total", n)
        if cached > 0:
            self.cached.labels(**labels).inc(cached)
            self.truth.counter("sglang:cached_tokens_total", cached)
        self.requests.labels(**labels).inc(1)
        self.truth.counter("sglang:num_requests_total", 1)
        self.e2e.labels(**labels).observe(e2e)
        self.truth.hist("sglang:e2e_request_latency_seconds", [e2e], e2e)

    def run(self, rng, requests, cached_ok):
        for _ in range(requests):
            self.request(rng, cached_ok)
        self.running.labels(**SGL_SCHEDULER_LABELS).set(0)
        self.waiting.labels(**SGL_SCHEDULER_LABELS).set(0)


class Sorted:
    """A MultiProcessCollector whose families come in name order: it reads
    the directory's files in the file system's order, which would make the
    goldens differ from run to run."""

    def __init__(self, collector):
        self.collector = collector

    def collect(self):
        return sorted(self.collector.collect(), key=lambda m: m.name)


def observe_itl(child, interval, num_new_tokens):
    """TokenizerMetricsCollector.observe_inter_token_latency, as SGLang writes it."""
    adjusted = interval / num_new_tokens
    child._sum.inc(interval)
    for i, bound in enumerate(child._upper_bounds):
        if adjusted <= bound:
            child._buckets[i].inc(num_new_tokens)
            break


def us(x):
    """x to the microsecond, as servers' clocks give it."""
    return round(x, 6)


def sum_seq(values):
    s = 0.0
    for v in values:
        s += v
    return s


def write_truth(f, truth):
    """JSON with one line per family, so that a regeneration diffs by family."""
    d = lambda v: json.dumps(v, sort_keys=True)
    f.write('{"generator": %s,\n "scenarios": {\n' % d(truth["generator"]))
    names = sorted(truth["scenarios"])
    for i, name in enumerate(names):
        f.write('  %s: [\n' % d(name))
        phases = truth["scenarios"][name]
        for j, ph in enumerate(phases):
            f.write('   {"file": %s, "families": {' % d(ph["file"]))
            fams = sorted(ph["families"])
            for k, fam in enumerate(fams):
                f.write('\n    %s: %s%s' % (d(fam), d(ph["families"][fam]), "," if k < len(fams) - 1 else ""))
            f.write('}}%s\n' % ("," if j < len(phases) - 1 else ""))
        f.write('  ]%s\n' % ("," if i < len(names) - 1 else ""))
    f.write(' }\n}\n')


def write(out, name, body):
    with open(os.path.join(out, name), "wb") as f:
        f.write(body)


def sglang_process(mp_dir):
    """A new SGLang process: PROMETHEUS_MULTIPROC_DIR set before its metrics
    are made, an empty directory, new value files. Children made from here on
    keep their values in that directory."""
    shutil.rmtree(mp_dir, ignore_errors=True)
    os.makedirs(mp_dir)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = mp_dir
    values.ValueClass = values.get_value_class()


def main(out):
    os.makedirs(out, exist_ok=True)
    truth = {"generator": {"prometheus_client": "0.16.0 (Debian python3-prometheus-client 0.16.0-0.1)",
                           "python": "%d.%d.%d" % sys.version_info[:3]},
             "scenarios": {}}

    def scenario(name, files):
        truth["scenarios"][name] = [{"file": f, "families": fams} for f, fams in files]

    # vLLM, two data-parallel engines, every child made at start.
    CLOCK.now = 1_700_000_000.0
    rng = random.Random(20260801)
    v = VLLM(["0", "1"], eager=True)
    files = [("vllm_fresh.txt", {})]
    write(out, "vllm_fresh.txt", generate_latest(v.r))
    v.run(rng, 8)
    files.append(("vllm_k.txt", v.truth.take()))
    write(out, "vllm_k.txt", generate_latest(v.r))
    v.run(rng, 24)
    files.append(("vllm_more.txt", v.truth.take()))
    write(out, "vllm_more.txt", generate_latest(v.r))
    scenario("vllm", files)

    # The same server restarted: once with fewer requests than before the
    # restart (counters go down), once with more (only _created tells).
    for name, n, boot in [("vllm_restart_small.txt", 3, 1_700_000_600.0), ("vllm_restart_big.txt", 80, 1_700_000_900.0)]:
        CLOCK.now = boot
        v = VLLM(["0", "1"], eager=True)
        v.run(rng, n)
        scenario(name[:-4], [(name, v.truth.take())])
        write(out, name, generate_latest(v.r))

    # vLLM's families with children made at their first observation, one
    # engine: fresh, the exposition holds HELP and TYPE lines only.
    CLOCK.now = 1_700_001_200.0
    v = VLLM(["0"], eager=False)
    files = [("vllm_lazy_fresh.txt", {})]
    write(out, "vllm_lazy_fresh.txt", generate_latest(v.r))
    v.run(rng, 12)
    files.append(("vllm_lazy_k.txt", v.truth.take()))
    write(out, "vllm_lazy_k.txt", generate_latest(v.r))
    scenario("vllm_lazy", files)

    # SGLang: multiprocess collector, lazily labelled; fresh it serves
    # nothing at all. Cached tokens first appear after the first batch.
    mp_dir = tempfile.mkdtemp(prefix="sglang-mp-")
    sglang_process(mp_dir)
    s = SGLang()
    files = [("sglang_fresh.txt", {})]
    write(out, "sglang_fresh.txt", s.scrape())
    s.run(rng, 8, cached_ok=False)
    files.append(("sglang_k.txt", s.truth.take()))
    write(out, "sglang_k.txt", s.scrape())
    s.run(rng, 24, cached_ok=True)
    files.append(("sglang_more.txt", s.truth.take()))
    write(out, "sglang_more.txt", s.scrape())
    scenario("sglang", files)

    sglang_process(mp_dir)
    s = SGLang()
    s.run(rng, 3, cached_ok=True)
    scenario("sglang_restart", [("sglang_restart.txt", s.truth.take())])
    write(out, "sglang_restart.txt", s.scrape())

    with open(os.path.join(out, "truth.json"), "w") as f:
        write_truth(f, truth)
    shutil.rmtree(mp_dir, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "engine/metrics/testdata/prom")
