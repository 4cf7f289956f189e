"""The best skill as a version in MLflow's Prompt Registry, tied to the evidence that accepted it.

The commit message lists every edit the gate accepted on the way to the best skill (the steps up
to the best step, and accepted slow updates), each step with its gate evidence: the selection
score before and after, and the items it flipped. Tags name the run, the task and the skill's sha,
so a registered version leads back to its run and a run never registers the same skill twice.
"""
from __future__ import annotations

import json
from typing import Any

from ..skill import sha
from ..store.reader import Reader
from ..vocabulary import ACCEPTED
from .mlflow_log import MAX_MESSAGE, Target, prompt_name

SHA_TAG, VERSION_TAG = "skillopt.prompt_sha", "skillopt.prompt_version"


def short(text: str | None, n: int = 70) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= n else line[:n - 1] + "…"


def describe(edit: dict[str, Any]) -> str:
    """One accepted edit in words."""
    if edit["op"] == "add":
        where = f" to {edit['section']}" if edit["section"] else ""
        return f'add{where}: "{short(edit["content"])}"'
    if edit["op"] == "replace":
        return f'replace "{short(edit["target"], 40)}" with "{short(edit["content"])}"'
    return f'{edit["op"]} "{short(edit["target"])}"'


def evidence(gate: dict[str, Any] | None) -> str:
    """`selection 0.500 → 0.633, 8 items flipped (+8 fixed / −0 broken)` from a gate row."""
    if gate is None:
        return "no gate"
    flips = json.loads(gate["flipped_json"] or "[]")
    fixed = sum(1 for _, before, after in flips if after > before)
    return (f"selection {gate['current_score']:.3f} → {gate['candidate_score']:.3f}, {len(flips)} items flipped "
            f"(+{fixed} fixed / −{len(flips) - fixed} broken)")


def commit_message(reader: Reader, run_id: str) -> str:
    run = reader.run(run_id) or {}
    best_step = run.get("best_step") or 0
    gates = {(g["step"], g["kind"]): g for g in reader.gate_decisions(run_id)}
    accepted: dict[int, list[dict[str, Any]]] = {}
    for e in reader.edits(run_id):
        if e["gate"] == "accepted" and e["step"] <= best_step:
            accepted.setdefault(e["step"], []).append(e)
    slow = [g for g in gates.values() if g["kind"] == "slow_update" and g["decision"] in ACCEPTED
            and g["step"] <= best_step]
    seed = reader.seed_score(run_id)
    head = (f"SkillOpt run {run_id} ({run.get('task')}): best skill of step {best_step}, selection "
            f"{_num(seed)} → {_num(run.get('best_score'))}")
    if run.get("best_test") is not None:
        head += f", test {_num(run.get('seed_test'))} → {_num(run.get('best_test'))}"
    entries: list[tuple[int, int, str]] = []
    for step, edits in accepted.items():
        entries.append((step, 0, f"step {step}: {evidence(gates.get((step, 'step')))}"))
        entries += [(step, 1, f"  - {describe(e)}") for e in edits]
    entries += [(g["step"], 2, f"slow update after step {g['step']}: {evidence(g)}") for g in slow]
    lines = [head, "", "Accepted edits:" if entries else "No edit accepted."]
    lines += [text for _, _, text in sorted(entries, key=lambda x: (x[0], x[1]))]
    return _clip(lines)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _clip(lines: list[str]) -> str:
    out: list[str] = []
    for i, line in enumerate(lines):
        if sum(len(x) + 1 for x in out) + len(line) > MAX_MESSAGE - 40:
            out.append(f"… and {len(lines) - i} more lines (run.json has them all)")
            break
        out.append(line)
    return "\n".join(out)


def register_best(t: Target, reader: Reader, run_id: str, name: str = "") -> str | None:
    """Register the best skill as a new prompt version; returns "name/version", or None when the
    best skill is still the seed (nothing was learned, so there is nothing new to version)."""
    run = reader.run(run_id)
    best, seed = reader.best_skill(run_id), reader.version(run_id, 0, "seed")
    if run is None or not best or best == seed:
        return None
    digest, tags = sha(best), t.client.get_run(t.id).data.tags
    if tags.get(SHA_TAG) == digest:  # registered already: by the live run, or an earlier export
        return tags.get(VERSION_TAG)
    name = name or prompt_name(run["task"])
    version = _registered(t.client, name, run_id, digest)
    if version is None:
        version = t.client.register_prompt(
            name=name, template=best, commit_message=commit_message(reader, run_id),
            tags={"skillopt.run_id": run_id, "skillopt.task": run["task"], SHA_TAG: digest,
                  "skillopt.best_step": str(run["best_step"]), "skillopt.mlflow_run_id": t.id}).version
    ref = f"{name}/{version}"
    t.client.set_tag(t.id, SHA_TAG, digest)
    t.client.set_tag(t.id, VERSION_TAG, ref)
    return ref


def _registered(client: Any, name: str, run_id: str, digest: str) -> int | None:
    """The version of `name` this run already registered with this skill (from another MLflow run
    of it, say an export into another experiment), else None."""
    try:
        versions = client.search_prompt_versions(name, max_results=1000)
    except Exception:  # no such prompt yet
        return None
    for v in versions:
        if v.tags.get("skillopt.run_id") == run_id and v.tags.get(SHA_TAG) == digest:
            return v.version
    return None
