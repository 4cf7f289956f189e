"""Export a run: best_skill.md, steps.csv and run.json (read-only over the store)."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..vocabulary import TEST_SKILLS
from .reader import Reader

# 95% sampling-noise intervals (samples_per_item > 1): export key -> the row's (lo, hi) columns.
STEP_INTERVALS = {"train_interval": ("train_lo", "train_hi"), "selection_interval": ("current_lo", "current_hi"),
                  "candidate_interval": ("candidate_lo", "candidate_hi")}
STEP_COLUMNS = ("step", "epoch", "edit_budget", "train_hard", "train_soft", "selection_score",
                "candidate_score", "best_score", "decision", "n_proposed", "n_applied", "duration_s")


def run_document(reader: Reader, run_id: str) -> dict[str, Any]:
    run = reader.run(run_id)
    if run is None:
        raise UserError(f"no run {run_id} in {reader.path}")
    edits_by_step: dict[int, list[dict[str, Any]]] = {}
    for e in reader.edits(run_id):
        edits_by_step.setdefault(e["step"], []).append(
            {k: e[k] for k in ("op", "target", "content", "section", "rationale", "source", "support")}
            | {"fate": e["fate"], "status": e["status"], "approval": e["approval"], "gate": e["gate"]})
    # A step whose candidate was not kept may have tried its worked examples alone, or the scorer's
    # reply template (`trial`: example | template; null: it tried nothing).
    trials = {g["step"]: {k: g[k] for k in ("trial", "decision", "current_score", "candidate_score", "p_value",
                                            "wins", "losses", "n_evaluated", "n_items")}
              for g in reader.gate_decisions(run_id) if g["kind"] == "examples"}
    steps = [{
        "step": s["step"], "epoch": s["epoch"], "edit_budget": s["edit_budget"],
        "train_hard": s["train_hard"], "train_soft": s["train_soft"],
        "selection_score": s["current_score"], "candidate_score": s["candidate_score"],
        "best_score": s["best_score"], "decision": s["decision"], "n_proposed": s["n_proposed"],
        "n_applied": s["n_applied"], "duration_s": s["duration_s"], "train_errors": s["train_errors"],
        "edits": edits_by_step.get(s["step"], []), "worked_examples": trials.get(s["step"]),
    } | intervals(s, STEP_INTERVALS) for s in reader.steps(run_id)]
    tests = reader.tests(run_id)
    usage = reader.usage(run_id)
    return {
        "run": {"id": run["id"], "name": run["name"], "status": run["status"], "reason": run["reason"],
                "task": run["task"], "simulated": bool(run["simulated"]), "config": run["config"],
                "best_step": run["best_step"], "best_selection_score": run["best_score"]},
        "steps": steps,
        "slow_updates": [{"epoch": u["epoch"], "guidance": u["guidance"], "decision": u["decision"],
                          "score_before": u["score_before"], "score_after": u["score_after"]}
                         for u in reader.slow_updates(run_id)],
        "meta_skills": [{"epoch": m["epoch"], "content": m["content"]} for m in reader.meta_skills(run_id)],
        "test": {w: (tests[w]["score"] if w in tests else None) for w in TEST_SKILLS},
        "lift": reader.lift(run_id),
        # Errored items are left out of a test score: how many each score stands on.
        "test_items": {w: {"n_items": tests[w]["n_items"], "n_errors": tests[w]["n_errors"],
                           "complete": bool(tests[w]["complete"]), "hard": tests[w]["hard"], "soft": tests[w]["soft"]}
                       | intervals(tests[w], {"interval": ("score_lo", "score_hi")})
                       for w in TEST_SKILLS if w in tests},
        "usage": {k: usage.get(k, 0) for k in ("target_calls", "optimizer_calls", "judge_calls", "prompt_tokens",
                                                "completion_tokens", "cost_usd", "cache_hits", "eval_cache_hits",
                                                "errors")},
    }


def intervals(row: dict[str, Any], columns: dict[str, tuple[str, str]]) -> dict[str, list[float]]:
    """{key: [lo, hi]} for each interval the row holds; nothing for scores taken once per item
    (so their export is what it always was)."""
    return {key: [row[lo], row[hi]] for key, (lo, hi) in columns.items() if row.get(lo) is not None}


def steps_csv(doc: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=STEP_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(doc["steps"])
    return out.getvalue()


def export_run(reader: Reader, run_id: str, out_dir: str | Path) -> list[Path]:
    doc = run_document(reader, run_id)
    best = reader.best_skill(run_id) or ""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"best_skill.md": best, "steps.csv": steps_csv(doc),
             "run.json": json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=False) + "\n"}
    written = []
    for name, text in files.items():
        path = out / name
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)  # never a half-written export
        written.append(path)
    return written
