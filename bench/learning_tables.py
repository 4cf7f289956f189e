"""README.md's learning blocks: the learning bench's tables, the edit checks' table and the fitted
prompt's table (bench/learning.py, bench/checks.py, bench/window.py), for bench/report.py."""
from __future__ import annotations

from render import NOT_MEASURED, command, when

# Earlier learning runs kept beside the current defaults' (name -> what differed), each its own table.
LEARNING_TRIALS = {
    "learning-contrast-examples": "Worked examples with contrasts (`contrast_examples=true`, every other setting "
                                  "the defaults): each failure shown beside a train task the incumbent got right "
                                  "whose right answer is the failure's wrong reply; on `waste-sorting`, whose "
                                  "bundled-examples run suggested it (not a held-out figure for it), and on "
                                  "`returns-desk`, generated and hashed before any run of it, and on `clinic-desk`, "
                                  "each against its default run in the table above",
    "learning-before-slow-train-items": "The defaults before the slow update's gate counted train items (the gate on "
                                        "the guidance on the selection split only, as `slow_train_items=false` "
                                        "gives), the embedded model as it is now otherwise; the bench was stopped "
                                        "after this task",
    "learning-clue-rules-off": "Clue rules off (`clue_rules=false`, every other setting the defaults), on a held-out "
                               "family, against its run with them on in the table above",
    "learning-repair-contradicted": "Contradicted label rules rewritten to the answer their trigger's train tasks "
                                    "clearly share (`repair_contradicted=true`, every other setting the defaults), "
                                    "on the held-out family whose run suggested it, so not a held-out figure for it",
    "learning-slow-update-forced": "The slow update forced in at the end of epoch 2 (`slow_update_gate=false`; "
                                   "every step before it runs as with the defaults), on a held-out family; the "
                                   "final skill is the forced one",
    "learning-before-auto-metric": "The defaults before the auto gate metric (a choice scorer is all or nothing, so "
                                   "on ticket-routing the auto metric is hard and gates the same), with speculative "
                                   "rollouts that warmed the next batch while the gate ran",
    "learning-before-trials-alone": "The defaults before trials were judged alone (`trial_train_items=false`: a "
                                    "worked-examples or clue-rule trial on the selection split only, kept when every "
                                    "trial's items pooled pass), the run that showed a 4–1 trial rejected for its "
                                    "predecessors' 8–10",
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
    cr = row.get("rule_trials")  # absent in results saved before the clue rules existed
    tried += f" (clue rules kept {cr['accepted']} of {cr['accepted'] + cr['rejected']})" if cr and sum(cr.values()) else ""
    tt = row.get("template_trials")  # absent in results saved before the reply template existed
    tried += f" (reply template {'kept' if tt['accepted'] else 'rejected'})" if tt and tt["accepted"] + tt["rejected"] else ""
    ab = row.get("ablation_trials")  # absent in results saved before the seed ablation existed
    tried += f" (seed blocks removed {ab['accepted']} of {ab['accepted'] + ab['rejected']})" if ab and sum(ab.values()) else ""
    dropped = ", ".join(f"{reason} {n}" for reason, n in e["not_applied"].items()) or "none"
    missed = [name.replace("_", " ") for name, t in row["targets"].items() if not t["met"]]
    verdict = f"**missed**: {', '.join(missed)}" if missed else "all met"
    named = f"{task} ({when(row['measured'])})" if row.get("measured") else task
    return (f"| {named} | {row['type']} | {score['none']} | {score['seed']} | {score['best']} | {score['final']} | "
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
    if any(row.get("measured") for row in fig["tasks"].values()):  # rows of several runs, the latest of each task
        label += ", the latest of each task (when and at which commit beside its name); the last"
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
