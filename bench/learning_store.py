"""A finished (or stopped) learning-bench run read back from the store, as a user would see it:
test scores, lift, decisions, edits by reason, optimizer replies and model calls. Reads only,
through a read-only connection; a table or column an older store lacks reads as null."""
from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

WHICH = ("none", "seed", "best", "final")


def query_rows(conn: sqlite3.Connection, sql: str, params: tuple) -> list[dict]:
    """Rows as dicts; a table or column this store lacks reads as no rows (reported as null)."""
    try:
        cur = conn.execute(sql, params)
    except sqlite3.OperationalError:
        return []
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def _round(value, digits: int = 4):
    return round(value, digits) if isinstance(value, float) else value


def read_tests(conn: sqlite3.Connection, run_id: str) -> tuple[dict, dict]:
    """(score of each tested skill or None, items and errored items of each score)."""
    rows = {r["which"]: r for r in query_rows(conn, "SELECT * FROM tests WHERE run_id = ?", (run_id,))}
    scores = {w: _round(rows[w]["score"]) if w in rows else None for w in WHICH}
    items = {w: {"n": rows[w]["n_items"], "errors": rows[w].get("n_errors", 0)} for w in WHICH if w in rows}
    return scores, items


def read_lift(conn: sqlite3.Connection, run_id: str) -> dict | None:
    rows = query_rows(conn, "SELECT * FROM lift WHERE run_id = ?", (run_id,))
    if not rows:
        return None
    row = rows[0]
    breakdown = json.loads(row.get("breakdown_json") or "{}")
    by = row.get("breakdown_by") or ("answer" if breakdown else "")  # a store from before m009: labels only
    return _lift(row["metric"], row["baseline"], row["best_score"], row["baseline_score"], row["lift"],
                 row["ci_low"], row["ci_high"], row["n_items"]) | {
        "breakdown": {label: {k: _round(v, 3) for k, v in cell.items()} for label, cell in breakdown.items()},
        "breakdown_by": by}


def _lift(metric: str, baseline: str, best: float, baseline_score: float, lift: float, ci_low: float,
          ci_high: float, n_items: int) -> dict:
    return {"metric": metric, "baseline": baseline, "best": _round(best), "baseline_score": _round(baseline_score),
            "lift": _round(lift), "ci_low": _round(ci_low), "ci_high": _round(ci_high), "n_items": n_items}


def read_hard(conn: sqlite3.Connection, run_id: str, rng_seed: int) -> tuple[dict, dict | None]:
    """(hard test accuracy of each tested skill or None, the lift on hard accuracy or None), from
    the test rollouts (errored items left out, as in every score). The lift is skillopt.lift's on
    per-item hard values with the run's seed: on a run gated on hard it is the stored lift."""
    from skillopt.lift import measure

    values: dict[str, dict[str, float]] = {}
    for r in query_rows(conn, "SELECT purpose, item_id, hard FROM rollouts WHERE run_id = ? AND split = 'test' "
                         "AND error = '' ORDER BY step", (run_id,)):
        values.setdefault(r["purpose"].removeprefix("test_"), {})[r["item_id"]] = r["hard"]
    scores = {w: _round(sum(values[w].values()) / len(values[w])) if values.get(w) else None for w in WHICH}
    if not all(values.get(w) for w in ("best", "seed", "none")):
        return scores, None
    lift = measure(values["best"], values["seed"], values["none"], {}, rng_seed=rng_seed)
    if lift is None:
        return scores, None
    return scores, _lift("hard", lift.baseline, lift.best_score, lift.baseline_score, lift.lift, lift.ci_low,
                         lift.ci_high, lift.n_items)


def decisions(values: list[str]) -> dict:
    count = Counter(values)
    return {"accepted": count["accept"] + count["accept_new_best"], "rejected": count["reject"],
            "skipped": count["skip"], "failed": count["failed"]}


def _contradicted(note: str) -> bool:
    return any(part.strip().startswith("contradicted") for part in (note or "").split("; "))


def not_applied_reason(edit: dict) -> str:
    """Why an edit did not change the candidate: a drop's reason (its note's first word), else its
    pipeline fate (clipped, merged, invalid, pending), else its patch status (anchor_not_found ...)."""
    if edit["fate"] == "dropped":
        return (edit.get("note") or "").split(":", 1)[0].strip() or "dropped"
    if edit["fate"] != "selected":
        return edit["fate"] or "unknown"
    return edit["status"] or "not_applied"


def read_edits(conn: sqlite3.Connection, run_id: str) -> dict:
    edits = query_rows(conn, "SELECT fate, status, gate, note FROM edits WHERE run_id = ?", (run_id,))
    applied = [e for e in edits if e["status"] == "applied"]
    reasons = Counter(not_applied_reason(e) for e in edits if e["status"] != "applied")
    contradicted = [e for e in edits if _contradicted(e.get("note", ""))]
    return {"proposed": len(edits), "applied": len(applied),
            "accepted": sum(e["gate"] == "accepted" for e in applied),
            "not_applied": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
            "contradicted": len(contradicted),
            "contradicted_accepted": sum(e["gate"] == "accepted" for e in contradicted)}


def _trial_gates(db: Path, run_id: str) -> list[dict]:
    """The model-free trials' gate rows in step order, each with `trial`: what it tried (example | rule |
    template | ablation), as the reader names them for the dashboard."""
    from skillopt.store.reader import Reader

    reader = Reader(db)
    try:
        return [g for g in reader.gate_decisions(run_id) if g["kind"] == "examples"]
    finally:
        reader.close()


def trial_log(conn: sqlite3.Connection, gates: list[dict], run_id: str) -> list[dict]:
    """Each trial in step order: what it tried, its decision, the items it won, lost and was scored
    on, and the target calls it paid (its step's "examples" stage): enough to read a run's trials
    again, or to ask what a different rule for trials would have cost, once its store is gone."""
    paid = {r["step"]: r["n"] for r in query_rows(
        conn, "SELECT step, COUNT(*) AS n FROM llm_calls WHERE run_id = ? AND role = 'target' AND cached = 0 "
              "AND stage = 'examples' GROUP BY step", (run_id,))}
    return [{"step": g["step"], "trial": g["trial"], "decision": g["decision"], "wins": g["wins"],
             "losses": g["losses"], "evaluated": g["n_evaluated"], "target_calls": paid.get(g["step"], 0)}
            for g in gates]


def target_stages(conn: sqlite3.Connection, run_id: str) -> dict[str, int]:
    """The target's calls by the stage that paid them (rollout, gate, examples, slow_update, test)."""
    return {r["stage"]: r["n"] for r in query_rows(
        conn, "SELECT stage, COUNT(*) AS n FROM llm_calls WHERE run_id = ? AND role = 'target' AND cached = 0 "
              "GROUP BY stage ORDER BY stage", (run_id,))}


def read_run(db: Path, run_id: str) -> dict:
    """Every figure of one run, from the store only."""
    from skillopt.vocabulary import TRIAL_NAMES

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        run = query_rows(conn, "SELECT status, reason, config_json FROM runs WHERE id = ?", (run_id,))[0]
        config = json.loads(run["config_json"] or "{}")
        scores, items = read_tests(conn, run_id)
        hard, hard_lift = read_hard(conn, run_id, config.get("seed", 0))
        steps = [r["decision"] for r in query_rows(conn, "SELECT decision FROM steps WHERE run_id = ?", (run_id,))]
        slow = [r["decision"] for r in query_rows(conn, "SELECT decision FROM slow_updates WHERE run_id = ?", (run_id,))]
        gates = _trial_gates(db, run_id)
        trials = {kind: [g["decision"] for g in gates if g["trial"] == kind] for kind in TRIAL_NAMES}
        replies = query_rows(conn, "SELECT COUNT(*) AS n, COALESCE(SUM(ok), 0) AS ok FROM reflections WHERE run_id = ?",
                        (run_id,))[0]
        calls = {r["role"]: r["n"] for r in query_rows(
            conn, "SELECT role, COUNT(*) AS n FROM llm_calls WHERE run_id = ? AND cached = 0 GROUP BY role", (run_id,))}
        hits = query_rows(conn, "SELECT COALESCE(SUM(cached), 0) AS n, COALESCE(SUM(error != ''), 0) AS errors "
                           "FROM llm_calls WHERE run_id = ?", (run_id,))[0]
        figures = {"run_id": run_id, "status": run["status"], "reason": run["reason"] or "",
                   "metric": config.get("gate_metric", "hard"), "test": scores, "test_items": items,
                   "lift": read_lift(conn, run_id), "test_hard": hard, "lift_hard": hard_lift,
                   "steps": decisions(steps), "slow_updates": decisions(slow), "examples_trials": decisions(trials["example"]),
                   "template_trials": decisions(trials["template"]), "rule_trials": decisions(trials["rule"]),
                   "ablation_trials": decisions(trials["ablation"]),
                   "optimizer_replies": {"usable": replies["ok"], "all": replies["n"],
                                         "share": _round(replies["ok"] / replies["n"]) if replies["n"] else None},
                   "edits": read_edits(conn, run_id),
                   "calls": {"target": calls.get("target", 0), "optimizer": calls.get("optimizer", 0),
                             "judge": calls.get("judge", 0), "cache_hits": hits["n"], "errors": hits["errors"]},
                   "target_calls_by_stage": target_stages(conn, run_id), "trial_log": trial_log(conn, gates, run_id)}
    finally:
        conn.close()
    return figures
