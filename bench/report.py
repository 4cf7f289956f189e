"""Writes the benchmark figures into README.md and bench/README.md from bench/results/*.json.

    python bench/report.py           # rewrite the marked blocks of both READMEs
    python bench/report.py --check   # exit 1 if a README differs from what the saved results say

Each bench saves its last JSON line (stamped with commit, date and command) in bench/results/.
This script is the only writer of the figures between `<!-- bench:NAME:begin -->` and
`<!-- bench:NAME:end -->`: the two READMEs cannot disagree, a hand edit of a figure fails
tests/test_bench_report.py, and a slow bench need not be re-run to refresh the table. A bench
without a saved result shows as "not measured", never as an older number.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from learning_tables import LEARNING_TRIALS, checks, learning, window  # bench/ is first on sys.path
from render import NOT_MEASURED, command, verdict, when

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
BENCHES = ("calls", "overhead", "dashboard", "local_model", "faults", "learning", "real_model", "sweep", "checks",
           *LEARNING_TRIALS, "window")
LABELS = {"oracle": "oracle optimizer (`sim/optimizer`, reads the hidden rules)",
          "non-oracle": "non-oracle optimizer (`sim/learner`, learns from the cases{noise})"}


def load(folder: Path = RESULTS) -> dict[str, dict]:
    """bench name -> its saved result; a missing or unreadable file is simply absent."""
    out = {}
    for bench in BENCHES:
        try:
            result = json.loads((folder / f"{bench}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(result, dict) and isinstance(result.get("figures"), dict):
            out[bench] = result
    return out


def short_config(config: list[str]) -> str:
    words = {"gate_mode=paired": "paired gate", "failure_only=true": "failure-only reflection",
             "use_cache=true": "cache", "gate_mode=strict": "strict gate", "use_cache=false": "no cache"}
    out = []
    for option in config:
        key, _, value = option.partition("=")
        if option in words:
            out.append(words[option])
        elif key == "gate_alpha":
            out.append(f"α {value}")
        elif key == "selection_size":
            out.append("whole selection split" if value == "0" else f"{value}-item selection sample")
    return ", ".join(out)


def ci(stat: dict, digits: int, signed: bool = False, unit: str = "", bold: bool = False) -> str:
    """"mean (95% CI low to high)", the mean in bold if asked."""
    fmt = f"{{:{'+' if signed else ''}.{digits}f}}"
    mean = f"{fmt.format(stat['mean'])}{unit}"
    mean = f"**{mean}**" if bold else mean
    if stat.get("low") is None:
        return mean
    return f"{mean} (95% CI {fmt.format(stat['low'])} to {fmt.format(stat['high'])})"


def reference_name(knobs: list[str]) -> str:
    """What a saved reference arm was: results saved before ceac7f7 left the project's additions on in it."""
    return ("strict gate, no cache, none of the project's additions" if "worked_examples=false" in knobs
            else "strict gate, no cache; the project's additions then on by default ran in it too")


def calls_miss(f: dict) -> str:
    why = [w for w, bad in (("ratio above 0.5", f["ratio"]["mean"] > 0.5),
                            ("test score lower", f["test_diff"]["mean"] < 0)) if bad]
    return ", ".join(why)


def calls_figures(fig: dict, label: str) -> str:
    f = fig[label]
    matched = "" if f["matched_on_tuning"] else " (no candidate reached the reference's score on the tuning seeds)"
    n = f["ratio"]["n"]
    return (f"{fig['task']}, 4 epochs × batch 40, {n} seeds ({fig['seeds'][0]}–{fig['seeds'][1]}), fresh databases. "
            f"Picked by the script's rule on tuning seeds {fig['tune_seeds'][0]}–{fig['tune_seeds'][1]}: "
            f"{short_config(f['config'])}{matched}. Reference ({reference_name(fig.get('reference', []))}) "
            f"{f['reference_target_calls']:.0f} target calls, test {f['reference_test']:.3f} → picked {f['target_calls']:.0f} calls, test "
            f"{f['test']:.3f}; per seed: calls ratio {ci(f['ratio'], 2, unit='×', bold=True)}, test difference "
            f"{ci(f['test_diff'], 3, signed=True)}; optimizer calls {f['reference_optimizer_calls']:.0f} → "
            f"{f['optimizer_calls']:.0f}")


def calls_rows(results: dict) -> list[str]:
    result = results.get("calls")
    rows = []
    for label, name in LABELS.items():
        fig = result["figures"] if result else {}
        noise = fig.get(label, {}).get("noise")
        name = name.format(noise=f", {noise:.0%} of its rules wrong or irrelevant" if noise is not None else "")
        if label in fig:
            f = fig[label]
            target = f"≤ 0.5× calls at no lower test score: {verdict(f['met'], calls_miss(f))}"
            rows.append(f"| model calls, {name} | {command(result, 'python bench/calls.py')} | "
                        f"{calls_figures(fig, label)} | {target} | {when(result)} |")
        else:
            rows.append(f"| model calls, {name} | `python bench/calls.py` | {NOT_MEASURED} | "
                        f"≤ 0.5× calls at no lower test score | — |")
    return rows


def overhead_row(results: dict) -> str:
    result = results.get("overhead")
    if not result:
        return f"| engine overhead | `python bench/overhead.py` | {NOT_MEASURED} | < 50 ms/step (median) | — |"
    f = result["figures"]
    figures = (f"**{f['step_overhead_median_ms']:.1f} ms/step** (median of {f['repeats']} runs; min "
               f"{f['step_overhead_min_ms']:.1f}, CPU {f['step_cpu_ms']:.1f}; batch 40, zero-latency simulated models, "
               f"{f['cpus']} CPUs)"
               + (f"; {f['step_overhead_commit_each_write_median_ms']:.1f} ms/step in the same run with each call "
                  f"row and cache entry committed on its own (unbuffered)"
                  if "step_overhead_commit_each_write_median_ms" in f else "")
               + f"; LLM layer {f['call_overhead_ms']:.3f} ms/call direct, "
               f"{f['call_overhead_store_ms']:.2f} ms with its accounting row, {f['call_overhead_litellm_ms']:.2f} ms "
               f"through `litellm.completion`")
    return (f"| engine overhead | {command(result, 'python bench/overhead.py')} | {figures} | "
            f"< 50 ms/step (median): {verdict(f['met'])} | {when(result)} |")


def dashboard_row(results: dict) -> str:
    result = results.get("dashboard")
    if not result:
        return f"| dashboard | `python bench/dashboard.py` | {NOT_MEASURED} | < 1.5 s per page | — |"
    f = result["figures"]
    pages = ", ".join(f"{page} {f['render_s'][page]:.2f} / {f['first_render_s'][page]:.2f} s"
                      for page in f["render_s"])
    slow = ", ".join(p for p, s in f["render_s"].items() if s >= f["target_s"])
    return (f"| dashboard | {command(result, 'python bench/dashboard.py')} | {f['rollout_rows']:,} rollout rows, "
            f"{f['steps']} steps; render (second / first): {pages} | < {f['target_s']} s per page (second render): "
            f"{verdict(f['met'], slow)} | {when(result)} |")


def browser_row(results: dict) -> str:
    """The dashboard in headless chromium: bench/dashboard.py's browser figures."""
    result = results.get("dashboard")
    f = result["figures"] if result else {}
    target = "every page < 2 s first render, < 1 s rerender"
    if "browser_first_s" not in f:
        return f"| dashboard in a browser | `python bench/dashboard.py` | {NOT_MEASURED} | {target} | — |"
    first, again = f["browser_first_s"], f["browser_rerender_s"]
    pages = ", ".join(f"{page} {first[page]:.1f} / {again[page]:.1f} s" for page in first)
    slow = [page for page in first if first[page] >= f["browser_first_target_s"]
            or again[page] >= f["browser_rerender_target_s"]]
    return (f"| dashboard in a browser | {command(result, 'python bench/dashboard.py')} | headless chromium, same "
            f"{f['rollout_rows']:,}-row store; until the status widget is gone and nothing changes for 500 ms "
            f"(first render on a server that served no page yet, in a fresh context / rerender in that context"
            f"{f', medians of {n} fresh servers per page' if (n := f.get('browser_repeats', 1)) > 1 else ''}): "
            f"{pages}{floor_text(f)} | {target}: {verdict(f['browser_met'], 'over: ' + ', '.join(slow))} | "
            f"{when(result)} |")


def floor_text(f: dict) -> str:
    """Streamlit's own floor, measured beside the pages (older results do not hold it)."""
    first, again = f.get("browser_floor_first_s"), f.get("browser_floor_rerender_s")
    if not first:
        return ""
    apps = ", ".join(f"{name.split(': ')[-1]} {first[name]:.1f} / {again[name]:.1f} s" for name in first)
    return (f"; Streamlit's own floor, the same way and server options (an app of one line of text, and the same "
            f"with one small plotly chart): {apps}")


def real_model_row(results: dict) -> str:
    """Real training with the embedded model: bench/real_model.py (a full run only)."""
    result = results.get("real_model")
    f = result["figures"] if result else {}
    target = "≤ 0.6× target calls and ≤ 0.5× wall time at an equal or better test score"
    name = "real training, embedded model (one seed, one run per arm: a real run takes 15–35 minutes on 2 cores)"
    if f.get("mode") != "full":
        return f"| {name} | `python bench/real_model.py` | {NOT_MEASURED} | {target} | — |"
    ref, new, r = f["arms"]["reference"], f["arms"]["defaults"], f["ratio"]
    why = [w for w, bad in (("calls above 0.6×", (r["target_calls"] or 9) > 0.6), ("wall time above 0.5×",
                            (r["wall_s"] or 9) > 0.5), ("test score lower", f["test_diff"] < 0)) if bad]
    figures = (f"{f['task']}, `{f['target']}` as target and optimizer, 2 epochs × batch 20, seed {f['seed']} (one "
               f"measurement, no interval). Reference ({reference_name(f.get('reference', []))}) "
               f"{ref['target_calls']} target + {ref['optimizer_calls']} optimizer calls, {ref['tokens']:,} tokens, "
               f"{ref['wall_s'] / 60:.1f} min, test {ref['test']['best']:.3f} → defaults {new['target_calls']} + "
               f"{new['optimizer_calls']} calls, {new['tokens']:,} tokens, {new['wall_s'] / 60:.1f} min, test "
               f"{new['test']['best']:.3f}: **{r['target_calls']:.2f}× target calls**, **{r['wall_s']:.2f}× wall "
               f"time**, {r['tokens']:.2f}× tokens")
    return (f"| {name} | {command(result, 'python bench/real_model.py')} | {figures} | {target}: "
            f"{verdict(f['met'], ', '.join(why))} | {when(result)} |")


def local_model_row(results: dict) -> str:
    result = results.get("local_model")
    if not result:
        return f"| embedded model | `python bench/local_model.py` | {NOT_MEASURED} | ≥ 3× rollouts/min | — |"
    f = result["figures"]
    # Results saved before the reply comparison existed carry no "replies_differ".
    same = f" (replies that differ: {f['replies_differ']} of {f['items']})" if "replies_differ" in f else ""
    return (f"| embedded model | {command(result, 'python bench/local_model.py')} | {f['skill']} skill "
            f"({f['skill_tokens']} tokens), {f['items']} items: {f['uncached_per_min']:.1f} → "
            f"{f['cached_per_min']:.1f} rollouts/min with KV prefix reuse (**{f['speedup']:.1f}×**){same} | "
            f"≥ 3× and the same replies: {verdict(f['met'])} | {when(result)} |")


def sweep_row(results: dict) -> str:
    """Sweep wall time, 1 vs 4 local workers vs 4 Ray workers: bench/sweep.py (a full run only)."""
    result = results.get("sweep")
    f = result["figures"] if result else {}
    if f.get("mode") != "full":
        return f"| sweep | `python bench/sweep.py` | {NOT_MEASURED} | ≥ 2.5× faster with 4 workers | — |"
    arms, speedup, target = f["arms"], f["speedup"], f["speedup_target"]
    label = {"local, 1 worker": "1 local worker", "local, 4 workers": "4 local workers",
             "ray, 4 workers": "4 Ray workers"}
    walls = " · ".join(f"{label.get(name, name)} {arm['wall_s']:.0f} s" for name, arm in arms.items())
    ratios = " · ".join(f"{label.get(name, name)} **{speedup[name]:.2f}×**" for name in arms
                        if name != "local, 1 worker")
    calls = "the same calls in every arm" if f["same_calls_in_every_arm"] else \
        "calls per arm " + ", ".join(str(arm["calls"]) for arm in arms.values())
    slow = [name for name in arms if name != "local, 1 worker" and speedup[name] < target]
    g = f["grid"]
    figures = (f"sim-rulebook, learning_rate {g['learning_rate']} × lr_scheduler {g['lr_scheduler']} × "
               f"{g['seeds']} seeds = {f['trials']} trials, simulated models waiting like remote APIs; wall time "
               f"(start-up included; starting and stopping Ray alone {f['ray_start_stop_s']:.0f} s): {walls}; "
               f"speed-up over 1 worker: {ratios}; {calls}; {f['cpus']} CPUs")
    return (f"| sweep | {command(result, 'python bench/sweep.py')} | {figures} | ≥ {target:g}× faster with 4 "
            f"workers: {verdict(f['met'], ', '.join(slow))} | {when(result)} |")


def faults_text(results: dict) -> str:
    result = results.get("faults")
    if not result:
        return NOT_MEASURED
    f = result["figures"]
    return (f"{f['kills_survived']}/{f['kills_tried']} kill points survived, {f['faults_survived']}/"
            f"{f['faults_injected']} injected faults survived and recorded, {f['bad_inputs_clean']}/"
            f"{f['bad_inputs_tried']} bad-input checks rejected cleanly ({f['wall_s']} s)")


def faults_row(results: dict) -> str:
    result = results.get("faults")
    ok = bool(result) and all(result["figures"][a] == result["figures"][b] for a, b in (
        ("kills_survived", "kills_tried"), ("faults_survived", "faults_injected"),
        ("bad_inputs_clean", "bad_inputs_tried")))
    target = f"all: {verdict(ok)}" if result else "all"
    return (f"| fault injection | {command(result, 'python bench/faults.py')} | {faults_text(results)} | "
            f"{target} | {when(result)} |")


HEAD = "| bench | command | figures | target | measured |\n|---|---|---|---|---|"


def performance(results: dict) -> str:
    """README.md's Performance table."""
    return "\n".join([HEAD, *calls_rows(results), real_model_row(results), overhead_row(results),
                      dashboard_row(results), browser_row(results), local_model_row(results), sweep_row(results)])


def reliability(results: dict) -> str:
    """README.md's sentence of fault-sweep figures."""
    result = results.get("faults")
    return f"Last measured ({when(result)}): {faults_text(results)}." if result else \
        f"Fault sweeps: {NOT_MEASURED}."


def calls_details(results: dict) -> list[str]:
    """bench/README.md: both arms of each optimizer, the context rows and the tuning table."""
    result = results.get("calls")
    labels = [label for label in LABELS if result and label in result["figures"]]
    if not labels:
        return [f"Model calls in detail: {NOT_MEASURED}."]
    fig = result["figures"]
    out = ["| optimizer | arm | configuration | target calls | optimizer calls | tokens | test (best skill) |",
           "|---|---|---|---|---|---|---|"]
    for label in labels:
        f = fig[label]
        out.append(f"| {label} | reference | {short_config(fig['reference'])} | {f['reference_target_calls']:.1f} | "
                   f"{f['reference_optimizer_calls']:.1f} | {f['reference_tokens']:,} | {f['reference_test']:.3f} |")
        out.append(f"| {label} | picked | {short_config(f['config'])} | {f['target_calls']:.1f} | "
                   f"{f['optimizer_calls']:.1f} | {f['tokens']:,} | {f['test']:.3f} |")
    out.append("")
    for label in labels:
        f = fig[label]
        out.append(f"- {label}: seed skill test {f['seed_test']:.3f}; context (outside the verdict): project defaults "
                   f"{f['defaults_target_calls']:.0f} target calls, picked + speculative rollouts "
                   f"{f['speculative_target_calls']:.0f}, picked with the runs sharing one database "
                   f"{f['shared_db_target_calls']:.0f}; not counted: {f['reference_repeat_test_calls']:.0f} calls per "
                   f"reference run re-testing a skill text it had already tested.")
    out += ["", f"Tuning seeds {fig['tune_seeds'][0]}–{fig['tune_seeds'][1]} (means; **bold** = picked by the rule):",
            "", "| configuration | " + " | ".join(f"{label} calls | {label} test" for label in labels) + " |",
            "|---|" + "---|---|" * len(labels)]
    cells = [fig[label]["tuning"] for label in labels]
    rows = [("reference", [t["reference"] for t in cells], [False] * len(labels))]
    rows += [(short_config(c.split()), [t["candidates"][i] for t in cells], [t["picked"] == i for t in cells])
             for i, c in enumerate(fig["candidates"])]
    for name, values, picked in rows:
        out.append(f"| {name} | " + " | ".join(
            (f"**{calls:.1f}** | **{test:.3f}**" if bold else f"{calls:.1f} | {test:.3f}")
            for (calls, test), bold in zip(values, picked)) + " |")
    return out


def bench_figures(results: dict) -> str:
    """bench/README.md's figures: the README's rows plus the details behind them."""
    out = [HEAD, *calls_rows(results), real_model_row(results), overhead_row(results), dashboard_row(results),
           browser_row(results), local_model_row(results), sweep_row(results), faults_row(results), "",
           *calls_details(results)]
    overhead = results.get("overhead")
    if overhead:
        hot = ", ".join(f"{owner} {pct:.0f}%" for owner, pct in list(overhead["figures"]["profile_pct"].items())[:5])
        out += ["", f"Where a step's time goes (cProfile self time, one single-threaded defaults run): {hot}."]
    return "\n".join(out)


BLOCKS = {"README.md": {"performance": performance, "reliability": reliability, "learning": learning,
                       "checks": checks, "window": window},
          "bench/README.md": {"figures": bench_figures}}


def replace_block(text: str, name: str, body: str) -> str:
    begin, end = f"<!-- bench:{name}:begin -->", f"<!-- bench:{name}:end -->"
    head, found, rest = text.partition(begin)
    _, found_end, tail = rest.partition(end)
    if not found or not found_end:
        raise SystemExit(f"markers {begin} ... {end} not found")
    return f"{head}{begin}\n{body}\n{end}{tail}"


def rendered(root: Path = ROOT, results: dict | None = None) -> dict[Path, tuple[str, str]]:
    """README path -> (current text, text with every block written from the results)."""
    results = load() if results is None else results
    out = {}
    for rel, blocks in BLOCKS.items():
        path = root / rel
        old = path.read_text(encoding="utf-8")
        new = old
        for name, render in blocks.items():
            new = replace_block(new, name, render(results))
        out[path] = (old, new)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check; exit 1 if a README is out of date")
    args = ap.parse_args()
    stale = []
    for path, (old, new) in rendered().items():
        if old != new:
            stale.append(path.relative_to(ROOT).as_posix())
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if args.check and stale:
        raise SystemExit(f"out of date with bench/results/: {', '.join(stale)} (run python bench/report.py)")
    print(("rewrote " + ", ".join(stale)) if stale else "READMEs match bench/results/")


if __name__ == "__main__":
    sys.exit(main())
