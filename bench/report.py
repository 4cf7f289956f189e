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

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
BENCHES = ("calls", "overhead", "dashboard", "local_model", "faults", "learning", "real_model", "sweep", "checks",
           "learning-worked-examples", "learning-examples-off", "learning-examples-per-trial",
           "learning-examples-pooled", "learning-before-template", "learning-before-auto-metric",
           "learning-slow-update-forced", "window")
# Earlier learning runs kept beside the current defaults' (name -> what differed), each its own table.
LEARNING_TRIALS = {
    "learning-slow-update-forced": "The slow update forced in at the end of epoch 2 (`slow_update_gate=false`; "
                                   "every step before it runs as with the defaults), on a held-out family; the "
                                   "final skill is the forced one",
    "learning-before-auto-metric": "The defaults before the auto gate metric (a choice scorer is all or nothing, so "
                                   "on ticket-routing the auto metric is hard and gates the same), with speculative "
                                   "rollouts that warmed the next batch while the gate ran",
    "learning-before-template": "The defaults before the reply-template trial (worked examples only, the trial's gate "
                                "holding the pooled record as its prior)",
    "learning-examples-pooled": "Worked examples pooled, each trial's gate stopping at its own decision (the defaults "
                                "before the trial's gate held the pooled record as its prior)",
    "learning-examples-per-trial": "Worked examples gated alone, each trial by its own sign test at α = 0.2 (the "
                                   "version measured first; after this run a trial is judged on all trials' items "
                                   "pooled)",
    "learning-examples-off": "Worked examples off (`worked_examples=false`, the defaults before worked examples were "
                             "gated alone and turned on)",
    "learning-worked-examples": "Worked examples bundled into every step's candidate, ranked first (the first version "
                                "of the mechanism, since replaced by the trial gated alone)"}
LABELS = {"oracle": "oracle optimizer (`sim/optimizer`, reads the hidden rules)",
          "non-oracle": "non-oracle optimizer (`sim/learner`, learns from the cases{noise})"}
NOT_MEASURED = "not measured"


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


def when(result: dict | None) -> str:
    if not result:
        return "—"
    dirty = " + uncommitted changes" if result.get("dirty") else ""
    return f"{result.get('date', '?')[:10]}, `{str(result.get('commit', '?'))[:7]}`{dirty}"


def command(result: dict | None, default: str) -> str:
    return f"`{result['command']}`" if result and result.get("command") else f"`{default}`"


def verdict(ok: bool, how: str = "") -> str:
    return "met" if ok else f"**missed**{' (' + how + ')' if how else ''}"


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
            f"{short_config(f['config'])}{matched}. Reference (strict gate, no cache) "
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
            f"(first render on a server that served no page yet, in a fresh context / rerender in that context): "
            f"{pages} | {target}: {verdict(f['browser_met'], 'over: ' + ', '.join(slow))} | {when(result)} |")


def real_model_row(results: dict) -> str:
    """Real training with the embedded model: bench/real_model.py (a full run only)."""
    result = results.get("real_model")
    f = result["figures"] if result else {}
    target = "≤ 0.6× target calls and ≤ 0.5× wall time at an equal or better test score"
    name = "real training, embedded model (one seed, one run per arm: a real run takes 25–35 minutes on 2 cores)"
    if f.get("mode") != "full":
        return f"| {name} | `python bench/real_model.py` | {NOT_MEASURED} | {target} | — |"
    ref, new, r = f["arms"]["reference"], f["arms"]["defaults"], f["ratio"]
    why = [w for w, bad in (("calls above 0.6×", (r["target_calls"] or 9) > 0.6), ("wall time above 0.5×",
                            (r["wall_s"] or 9) > 0.5), ("test score lower", f["test_diff"] < 0)) if bad]
    figures = (f"{f['task']}, `{f['target']}` as target and optimizer, 2 epochs × batch 20, seed {f['seed']} (one "
               f"measurement, no interval). Reference (strict gate, no cache) "
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
    return (f"| embedded model | {command(result, 'python bench/local_model.py')} | {f['skill']} skill "
            f"({f['skill_tokens']} tokens), {f['items']} items: {f['uncached_per_min']:.1f} → "
            f"{f['cached_per_min']:.1f} rollouts/min with KV prefix reuse (**{f['speedup']:.1f}×**) | "
            f"≥ 3×: {verdict(f['met'])} | {when(result)} |")


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


LEARNING_FULL = "2 epochs × batch 20, embedded model as target and optimizer"
LEARNING_QUICK = ("`--quick`: 1 epoch, batch 8, 12 selection and 20 test items, at most 2 steps; a smoke test, "
                  "no evidence for or against the targets")


LEARNING_HEAD = ("| task | type | no skill | seed | best | final | lift (95% CI) | steps accepted / rejected / skipped | "
                 "usable optimizer replies | edits applied / proposed | not applied, by reason | accepted contradicted "
                 "edits | calls target / optimizer | wall time | targets |",
                 "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def _pts(value: float) -> str:
    return f"{value * 100:+.1f}"


def learning_cells(task: str, row: dict) -> str:
    """One task's row of the learning table (bench/learning.py's figures)."""
    if row.get("status") == "error":
        return f"| {task} | {row['type']} | error: {row['reason']} |" + " — |" * 11 + " **missed** |"
    s, lift, e = row["test"], row["lift"], row["edits"]
    score = {w: "n/a" if s.get(w) is None else f"{s[w]:.3f}" for w in ("none", "seed", "best", "final")}
    lift_cell = (f"{_pts(lift['lift'])} pts over {lift['baseline']} ({_pts(lift['ci_low'])} to {_pts(lift['ci_high'])})"
                 if lift else "n/a")
    metric, h, lh = row.get("metric", "hard"), row.get("test_hard") or {}, row.get("lift_hard")
    if metric != "hard":  # gated on partial credit: its scores, then hard accuracy (what the targets judge)
        score = {w: f"{v} {metric}, {'n/a' if h.get(w) is None else f'{h[w]:.3f}'} hard" for w, v in score.items()}
        lift_cell = f"{metric}: {lift_cell}; hard: " + (
            f"{_pts(lh['lift'])} pts over {lh['baseline']} ({_pts(lh['ci_low'])} to {_pts(lh['ci_high'])})" if lh else "n/a")
    st, r, c = row["steps"], row["optimizer_replies"], row["calls"]
    x = row.get("examples_trials")  # absent in results saved before the trials existed
    tried = f" (worked examples kept {x['accepted']} of {x['accepted'] + x['rejected']})" if x else ""
    tt = row.get("template_trials")  # absent in results saved before the reply template existed
    tried += f" (reply template {'kept' if tt['accepted'] else 'rejected'})" if tt and tt["accepted"] + tt["rejected"] else ""
    dropped = ", ".join(f"{reason} {n}" for reason, n in e["not_applied"].items()) or "none"
    missed = [name.replace("_", " ") for name, t in row["targets"].items() if not t["met"]]
    verdict = f"**missed**: {', '.join(missed)}" if missed else "all met"
    return (f"| {task} | {row['type']} | {score['none']} | {score['seed']} | {score['best']} | {score['final']} | "
            f"{lift_cell} | {st['accepted']} / {st['rejected']} / {st['skipped']}{tried} | {r['usable']} / {r['all']} | "
            f"{e['applied']} / {e['proposed']} | {dropped} | {e['contradicted_accepted']} | {c['target']} / "
            f"{c['optimizer']} | {row['wall_s']:.0f} s | {verdict} |")


def learning(results: dict) -> str:
    """README.md's learning table: the full run, or "not measured" and a quick run labelled quick."""
    result = results.get("learning")
    fig = result["figures"] if result else {}
    full = fig.get("mode") == "full"
    out = [] if full else [f"Full run (`python bench/learning.py`, {LEARNING_FULL}): {NOT_MEASURED}."]
    if not fig:
        return "\n".join(out)
    label = f"Full run ({LEARNING_FULL})" if full else f"Quick run ({LEARNING_QUICK})"
    out += ([""] if out else []) + [f"{label}: {command(result, 'python bench/learning.py')}, {when(result)}.", "",
                                    *LEARNING_HEAD]
    out += [learning_cells(task, row) for task, row in fig["tasks"].items()]
    # A bench stopped before its last task saves the tasks it finished; the rest are named, unmeasured.
    out += [f"| {task} | — | not measured: the bench was stopped before this task finished |" + " — |" * 11 + " **missed** |"
            for task in fig.get("pending", [])]
    for name, what in LEARNING_TRIALS.items():  # earlier configurations, each saved under its own name
        trial = results.get(name)
        if trial:
            out += ["", f"{what}; {LEARNING_FULL}: {command(trial, 'python bench/learning.py')}, {when(trial)}.", "",
                    *LEARNING_HEAD]
            out += [learning_cells(task, row) for task, row in trial["figures"]["tasks"].items()]
    return "\n".join(out)


def checks(results: dict) -> str:
    """README.md's table of the edit checks (bench/checks.py): which earn their calls."""
    result = results.get("checks")
    if not result:
        return f"Edit checks (`python bench/checks.py`): {NOT_MEASURED}."
    fig = result["figures"]
    out = [f"Edit checks, {fig['task']} with the {fig['optimizer']} optimizer, seeds {fig['seeds'][0]}–"
           f"{fig['seeds'][-1]}, project defaults otherwise: {command(result, 'python bench/checks.py')}, "
           f"{when(result)}.", "",
           "| arm | target calls | test score (best) | compared with | calls ratio (95% CI) | test difference (95% CI) "
           "| verdict |",
           "|---|---|---|---|---|---|---|"]
    for name, a in fig["arms"].items():
        if "ratio" not in a:
            out.append(f"| {name} | {a['target_calls']:.0f} | {a['test_best']:.3f} | — | — | — | the baseline |")
            continue
        r, d = a["ratio"], a["test_diff"]
        out.append(f"| {name} | {a['target_calls']:.0f} | {a['test_best']:.3f} | {a.get('baseline', 'no checks')} | "
                   f"{r['mean']:.3f}× "
                   f"({r['low']:.3f}–{r['high']:.3f}) | {d['mean']:+.4f} ({d['low']:+.4f} to {d['high']:+.4f}) | "
                   f"{a['verdict']} |")
    return "\n".join(out)


def window(results: dict) -> str:
    """README.md's table of a grown skill's reflection prompt, whole vs fitted (bench/window.py)."""
    result = results.get("window")
    if not result:
        return f"A grown skill's reflection prompt on the embedded model (`python bench/window.py`): {NOT_MEASURED}."
    f = result["figures"]
    out = [f"A grown skill's reflection prompt on the embedded model, {f['task']}: seed, reply template and a full "
           f"worked-examples section, {f['skill_tokens']} tokens; {f['failures']} of {f['rollouts']} rollouts "
           f"failed; a prompt may take {f['room']} tokens of the window: {command(result, 'python bench/window.py')}, "
           f"{when(result)}.", "",
           "| arm | prompt sent | tokens (left for the reply) | outcome | what the prompt left out | minibatch |",
           "|---|---|---|---|---|---|"]
    for arm in f["arms"]:
        for n, call in enumerate(arm["calls"], 1):
            left = "; ".join(part.split(": ", 1)[1] for part in call["note"].split("; ")
                             if part.startswith("prompt fitted")) or "nothing"
            outcome = (f"failed: {call['error']}" if call["error"]
                       else "answered" + (" after a repair re-ask" if call["repaired"] else ""))
            last = n == len(arm["calls"])
            done = f"{arm['usable']} / {arm['minibatches']} usable, {arm['edits']} edit(s)" if last else ""
            out.append(f"| {arm['arm'] if n == 1 else ''} | {n} | {call['prompt_tokens']} ({call['reply_room']}) | "
                       f"{outcome} | {left} | {done} |")
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
