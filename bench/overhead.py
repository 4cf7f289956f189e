"""Engine overhead: time per training step with zero-latency models, and per-call cost of the LLM layer.

    python bench/overhead.py [--repeats 5] [--calls 5000] [--no-save]

1. Step overhead. Full runs on `sim-rulebook` (4 epochs x batch 40 = 12 steps) with the
   simulated models (oracle optimizer; its replies take ~0.01-0.2 ms, like the target's): what
   is left is the engine (store, cache, evaluator, reflection prompts, threads). Figure =
   whole-run wall time / steps (seed scoring, epoch ends and test evaluations included): the
   MEDIAN over --repeats runs is the headline and the verdict (what a user waits for on a
   shared machine), the minimum is printed beside it (timeit's rule: the cost without
   interference). Measured for the project defaults; the verdict needs at least 5 runs. The
   same runs with every call row and cache entry committed in a transaction of its own (as the
   store did before it buffered them until the next event) are the in-run baseline of the
   buffering. Then one more run, single-threaded under cProfile, shows where the engine's time
   goes (self time per module).
2. Call overhead. A no-op provider (returns "ok" at once) is called directly, through
   LLM.complete (retries, budget, accounting record), through LLM.complete with the run's
   SQLite store as sink (cache lookup + write, accounting row; flushed every 40 calls, as a
   batch's event would), and through
   litellm.completion (via_litellm=True). Figure = per-call time minus the bare handler's.

Rule of every bench (bench/README.md): a reference arm emulates the published behaviour
(gate_mode=strict, use_cache=false), and in every arm a test evaluation of a skill text already
tested in the run is counted once. This bench counts no calls and has no reference arm (its
baselines are the bare handler and the direct call); the timed runs use the project defaults,
whose cache makes a repeated test evaluation free.

The last line is one JSON object with every figure, also saved to bench/results/overhead.json.
"""
from __future__ import annotations

import argparse
import collections
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchkit import finish  # noqa: E402  (bench/ is the script's folder, first on sys.path)
from skillopt import runner  # noqa: E402
from skillopt.config import load_config  # noqa: E402
from skillopt.models.llm import LLM  # noqa: E402
from skillopt.models.providers import GenSettings, HandlerResult, register_provider  # noqa: E402
from skillopt.store.writer import Store  # noqa: E402

TASK = "sim-rulebook"
SIM = ("target_model=sim/target", "optimizer_model=sim/optimizer")
CONFIGS = {"defaults": ()}
PACKAGE = str(Path(__file__).resolve().parents[1] / "skillopt")


# ---- 1. step overhead -------------------------------------------------------------------

class CommitEachWrite(Store):
    """The store before buffering: every call row and cache entry in a transaction of its own."""

    def cache_put(self, key, model, value):
        super().cache_put(key, model, value)
        self.flush()

    def record_call(self, record):
        super().record_call(record)
        self.flush()

    def eval_put(self, key, t):
        super().eval_put(key, t)
        self.flush()


def one_run(overrides: tuple[str, ...], profiler: cProfile.Profile | None = None,
            store_class: type[Store] = Store) -> tuple[float, float, int]:
    """(wall s, process CPU s, steps) of one full simulated run into a fresh database."""
    with tempfile.TemporaryDirectory(prefix="skillopt-bench-") as tmp:
        store = store_class(Path(tmp) / "runs.db")
        config = load_config(None, [*SIM, *overrides])
        try:
            if profiler is not None:
                profiler.enable()
            wall, cpu = time.perf_counter(), time.process_time()
            run_id, status = runner.start(store, TASK, config)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if profiler is not None:
                profiler.disable()
            steps = store.run(run_id)["total_steps"]
        finally:
            store.close()
    if status != "completed":
        raise SystemExit(f"the simulated run ended {status}")
    return wall, cpu, steps


class Inline:
    """A thread pool that runs each task at once in the caller: the profiled run is single-
    threaded, so cProfile sees all the work (and none of the lock waits, which are measured
    separately as wall - CPU). Decisions and counts are those of the threaded run."""

    def __init__(self, *args, **kwargs):
        pass

    def submit(self, fn, *args, **kwargs) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # delivered through the future, as a real pool does
            future.set_exception(exc)
        return future

    def map(self, fn, *iterables):
        return [fn(*args) for args in zip(*iterables)]

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def _where(path: str, name: str) -> str:
    """A cProfile entry's owner: a skillopt module, SQLite, or the library doing the work."""
    if path.startswith(PACKAGE):
        return "skillopt." + Path(path).stem
    if "sqlite3" in name or "sqlite_utils" in path:
        return "sqlite (C library)"
    if path == "~":
        return "python builtins"
    file = Path(path)
    if "site-packages" in path:
        return "library " + file.parts[file.parts.index("site-packages") + 1]
    # a stdlib package module (json/encoder.py) is named by its package, a plain module by itself
    return file.parent.name if (file.parent / "__init__.py").exists() else file.stem


def profile(overrides: tuple[str, ...]) -> list[tuple[str, float]]:
    """Self time per module of one single-threaded run under cProfile."""
    from skillopt import reflect, rollout, speculation

    saved = {m: m.ThreadPoolExecutor for m in (reflect, rollout, speculation)}
    for module in saved:
        module.ThreadPoolExecutor = Inline
    profiler = cProfile.Profile()
    try:
        one_run(overrides, profiler)
    finally:
        for module, pool in saved.items():
            module.ThreadPoolExecutor = pool
    stats = pstats.Stats(profiler).stats  # (file, line, name) -> (cc, nc, tottime, cumtime, callers)
    total = sum(v[2] for v in stats.values()) or 1.0
    by_owner: collections.Counter = collections.Counter()
    by_function: collections.Counter = collections.Counter()
    for (path, line, name), (_, _, tottime, _, callers) in stats.items():
        by_function[f"{Path(path).stem if path != '~' else ''}:{name}".lstrip(":")] += tottime
        if path == "~" and "sqlite3" not in name and callers:
            for (cpath, _, cname), caller_stats in callers.items():  # a builtin's time is its caller's
                by_owner[_where(cpath, cname)] += caller_stats[2]
        else:
            by_owner[_where(path, name)] += tottime
    print("\nwhere the time goes (cProfile self time, one single-threaded defaults run):")
    for owner, t in by_owner.most_common(10):
        print(f"  {100 * t / total:5.1f}%  {owner}")
    print("  hottest functions:")
    for fn, t in by_function.most_common(8):
        print(f"  {100 * t / total:5.1f}%  {fn}")
    return [(o, round(100 * t / total, 1)) for o, t in by_owner.most_common(10)]


# ---- 2. call overhead -------------------------------------------------------------------

def noop(name, messages, settings, response_format):
    return HandlerResult("ok", 1, 1)


register_provider("benchnoop", noop)
register_provider("benchnooplite", noop, via_litellm=True)

SKILL = "# Skill\n\n" + "".join(f"- House rule {i}: orders of kind {i} take route {i % 7}.\n" for i in range(40))


def messages(i: int) -> list[dict]:
    # a realistic rollout prompt: a ~2 KB skill and a short task; unique per call (no cache hits)
    return [{"role": "system", "content": SKILL}, {"role": "user", "content": f"Route order Z-{i:06d}."}]


def per_call(fn, n: int, flush=None) -> float:
    """Seconds per call; `flush` (a store's) runs every 40 calls, as the event of a batch would."""
    msgs = [messages(i) for i in range(n)]
    fn(messages(-1))  # warm-up (imports, first-use registration)
    start = time.perf_counter()
    for i, m in enumerate(msgs, 1):
        fn(m)
        if flush is not None and i % 40 == 0:
            flush()
    if flush is not None:
        flush()
    return (time.perf_counter() - start) / n


def call_overhead(n: int) -> dict[str, float]:
    settings = GenSettings(max_retries=0)
    bare = per_call(lambda m: noop("x", m, settings, None), n)
    direct = LLM("benchnoop/x", "target", settings, use_cache=False)
    layer = per_call(lambda m: direct.complete(m, stage="rollout", step=0), n)
    with tempfile.TemporaryDirectory(prefix="skillopt-bench-") as tmp:
        store = Store(Path(tmp) / "calls.db")
        try:
            accounted = LLM("benchnoop/x", "target", settings, sink=store, run_id="bench", use_cache=False)
            with_store = per_call(lambda m: accounted.complete(m, stage="rollout", step=0), n, store.flush)
            cached = LLM("benchnoop/x", "target", settings, sink=store, run_id="bench", use_cache=True)
            with_cache = per_call(lambda m: cached.complete(m, stage="rollout", step=0), n, store.flush)
        finally:
            store.close()
    lite = LLM("benchnooplite/x", "target", settings, use_cache=False)
    via_litellm = per_call(lambda m: lite.complete(m, stage="rollout", step=0), max(50, n // 20))
    ms = lambda s: round(s * 1000, 4)  # noqa: E731
    figures = {
        "handler_ms": ms(bare),
        "call_overhead_ms": ms(layer - bare),
        "call_overhead_store_ms": ms(with_store - bare),
        "call_overhead_store_cache_ms": ms(with_cache - bare),
        "call_overhead_litellm_ms": ms(via_litellm - bare),
    }
    print("\nper-call overhead over a no-op provider (ms per call, handler time subtracted):")
    print(f"  bare handler                                   {ms(bare):8.4f}")
    print(f"  LLM.complete, direct handler                   {figures['call_overhead_ms']:8.4f}")
    print(f"  + SQLite store accounting row                  {figures['call_overhead_store_ms']:8.4f}")
    print(f"  + response cache (miss: lookup + write)        {figures['call_overhead_store_cache_ms']:8.4f}")
    print(f"  LLM.complete through litellm.completion        {figures['call_overhead_litellm_ms']:8.4f}")
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5, help="runs per configuration (at least 5); the median counts")
    ap.add_argument("--calls", type=int, default=5000, help="calls per per-call measurement")
    ap.add_argument("--no-save", action="store_true", help="do not overwrite bench/results/overhead.json")
    args = ap.parse_args()
    if args.repeats < 5 and not args.no_save:
        ap.error("the saved verdict is a median of at least 5 runs: --repeats 5 or more (or --no-save)")
    one_run(CONFIGS["defaults"])  # warm-up: imports, sqlite, the simulator's caches
    print(f"{TASK}, simulated models (zero latency), 4 epochs x batch 40; {args.repeats} runs each, "
          f"{os.cpu_count()} CPUs")
    step_ms = step_overhead(args.repeats)
    verdict = "met" if step_ms["defaults"]["median"] < 50 else "MISSED"
    print(f"step overhead (defaults, median): {step_ms['defaults']['median']:.1f} ms (target < 50) -> {verdict}")
    hot = profile(CONFIGS["defaults"])
    calls = call_overhead(args.calls)
    finish("overhead", {"step_overhead_median_ms": step_ms["defaults"]["median"],
                        "step_overhead_min_ms": step_ms["defaults"]["min"], "step_cpu_ms": step_ms["defaults"]["cpu"],
                        "step_overhead_commit_each_write_median_ms": step_ms["commit each write"]["median"],
                        "repeats": args.repeats,
                        **calls, "profile_pct": dict(hot), "cpus": os.cpu_count(),
                        "met": step_ms["defaults"]["median"] < 50}, save=not args.no_save)


def step_overhead(repeats: int) -> dict[str, dict[str, float]]:
    """ms/step (min, median, CPU) of the defaults, and of the defaults with every store write
    committed on its own; the two arms' runs alternate, so a burst of load hits both alike."""
    arms = {"defaults": Store, "commit each write": CommitEachWrite}
    runs: dict[str, list] = {name: [] for name in arms}
    for _ in range(repeats):
        for name, store_class in arms.items():
            runs[name].append(one_run(CONFIGS["defaults"], store_class=store_class))
    print(f"{'store writes':<18} {'steps':>5} {'ms/step min':>11} {'median':>7} {'CPU ms/step':>11}")
    step_ms = {}
    for name, measured in runs.items():
        steps = measured[0][2]
        walls = [w / steps * 1000 for w, _, _ in measured]
        cpu = min(c for _, c, _ in measured) / steps * 1000
        step_ms[name] = {"min": round(min(walls), 1), "median": round(statistics.median(walls), 1),
                         "cpu": round(cpu, 1)}
        print(f"{name:<18} {steps:>5} {min(walls):>11.1f} {statistics.median(walls):>7.1f} {cpu:>11.1f}")
    return step_ms


if __name__ == "__main__":
    main()
