"""Faulty models and budgets: a run survives every kind of bad model behaviour, records each
fault on its llm_calls row, shows them on the Monitor page, fails loudly (never all-zero)
when a model is dead, and never spends past max_calls / max_cost_usd by more than the
calls already in flight.

Faults come from two places: the simulated models' own injection (options on the model
string) and `Flaky`, a fake provider registered with via_litellm=True, so its faults
travel as real litellm exceptions and responses. Backoff sleeping is patched out.
"""
from __future__ import annotations

import json
import re
import threading
from collections import Counter
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers import run_sim, tables
from skillopt.store import export
from skillopt.models import llm, sim, sim_optimizer, simworld
from skillopt.models.jsonreply import extract_json
from skillopt.models.providers import HandlerResult, ProviderError, register_provider
from skillopt.store.reader import Reader

APP = str(Path(__file__).resolve().parent.parent / "app.py")
SMALL = ("num_epochs=2", "max_steps_per_epoch=2", "batch_size=16", "slow_update_samples=8",
         "selection_size=20", "test_size=20")
TRANSPORT = ("timeout", "rate_limit", "server", "connection", "empty")
RETRY_AFTER_S = 3.0


# ---- the fake litellm provider ----------------------------------------------------------------

TARGET_FAULTS = {"rate_limit": 0.04, "server": 0.04, "timeout": 0.03, "connection": 0.03, "empty": 0.03,
                 "cut_at_max_tokens": 0.03, "over_max_tokens": 0.02}
OPTIMIZER_FAULTS = {"rate_limit": 0.06, "server": 0.05, "empty": 0.03, "malformed": 0.15, "schema": 0.15,
                    "over_max_tokens": 0.04}
# Drawn separately, only for reflection replies that propose edits (the faults act on an edit).
EDIT_FAULTS = {"unknown_op": 0.25, "huge_content": 0.25}


class Flaky:
    """Answers like the simulated world, with faults drawn from a hash of (prompt, attempt).

    `injected` counts the faults it really produced, by kind, for the accounting check.
    """

    def __init__(self, target_faults=TARGET_FAULTS, optimizer_faults=OPTIMIZER_FAULTS, edit_faults=EDIT_FAULTS):
        self.rates = {"target": target_faults, "optimizer": optimizer_faults}
        self.edit_faults = edit_faults
        self.injected: Counter[str] = Counter()
        self._attempts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, name, messages, settings, response_format):
        role = name.split("?")[0]
        text = "\n".join(str(m.get("content", "")) for m in messages)
        with self._lock:
            self._attempts[text] += 1
            attempt = self._attempts[text]
        kind = self._draw(role, text, attempt)
        if kind in TRANSPORT and kind != "empty":
            self._count(kind)
            retry_after = RETRY_AFTER_S if kind == "rate_limit" else None
            raise ProviderError(kind, f"injected {kind} fault", retry_after)
        if kind == "empty":
            self._count(kind)
            return HandlerResult("", 10, 0)
        answer = sim.handle(
            "target" if role == "target" else "optimizer?faults=0&repair=1", messages, settings, response_format)
        if not kind and "skillopt:reflect" in text and self.edit_faults:
            kind = self._pick(self.edit_faults, simworld.unit("flaky-edit", text, attempt))
        faulty = self._corrupt(kind, answer.text, settings.max_tokens, "skillopt:reflect" in text)
        if faulty is None:
            return answer
        self._count(kind)
        reply, completion_tokens = faulty
        return HandlerResult(reply, answer.prompt_tokens, completion_tokens)

    def _draw(self, role: str, text: str, attempt: int) -> str:
        return self._pick(self.rates[role], simworld.unit("flaky", role, text, attempt))

    @staticmethod
    def _pick(rates: dict[str, float], u: float) -> str:
        edge = 0.0
        for kind, rate in rates.items():
            edge += rate
            if u < edge:
                return kind
        return ""

    def _count(self, kind: str) -> None:
        with self._lock:
            self.injected[kind] += 1

    @staticmethod
    def _corrupt(kind: str, reply: str, max_tokens: int, reflection: bool) -> tuple[str, int] | None:
        """(bad reply, completion tokens), or None when the fault does not apply to this reply."""
        far = "\n" + "lorem ipsum " * (llm.TRUNCATE_FACTOR * max_tokens // 4)
        if kind == "cut_at_max_tokens":
            return reply[: max(1, len(reply) // 2)], max_tokens  # the provider stopped at the cap
        if kind == "over_max_tokens":
            return reply + far, 20 * max_tokens  # a runaway generation, far past the cap
        if kind == "malformed":
            return reply[: len(reply) // 2], 50
        if kind == "schema":
            return json.dumps({"summary": 5, "edits": "none", "guidance": 7, "content": 7, "budget": "many"}), 20
        if kind in EDIT_FAULTS and reflection:
            try:
                obj = extract_json(reply)
            except ValueError:
                return None
            edits = obj.get("edits") if isinstance(obj, dict) else None
            if not edits:
                return None
            if kind == "unknown_op":
                edits[0]["op"] = "rewrite"
            else:
                edits[0]["content"] = "Always route carefully. " * 4000  # ~100k chars
            return json.dumps(obj), 200
        return None


def register_flaky(prefix: str, flaky: Flaky) -> None:
    register_provider(prefix, flaky, via_litellm=True)


# ---- what the store accounts for ------------------------------------------------------------------

_RETRIED = re.compile(r"(?:retried: | \| )(" + "|".join(TRANSPORT) + r"): ")


_NOTE_IN_ERROR = re.compile(r"(?:^|; )(?:retried|truncated|dropped): |\(repair asked\)")


def accounted(db: Path, run_id: str) -> Counter[str]:
    """Faults recorded on the run's llm_calls rows, by category. Faults of a call that still
    answered are read from its note only, failures from its error only; a note found in
    the error column fails the check."""
    found: Counter[str] = Counter()
    rows = Reader(db).q("SELECT error, note, attempts FROM llm_calls WHERE run_id = ? AND cached = 0 "
                        "AND (error != '' OR note != '')", (run_id,))
    for row in rows:
        error, note = row["error"], row["note"]
        assert not _NOTE_IN_ERROR.search(error), f"a note in the error column: {error}"
        retried = _RETRIED.findall(note) if note.startswith("retried: ") else []
        for kind in retried:
            found[kind] += 1
        failed = next((k for k in TRANSPORT if error.startswith(f"{k}: ")), None)
        if failed:  # every attempt of a call that finally failed was a fault
            found[failed] += row["attempts"]
        found["truncated"] += "truncated: " in note
        found["invalid_json"] += ("invalid_json: " in note) + ("invalid_json: " in error)
        found["dropped"] += "dropped: " in note
    return found


def expected_records(injected: Counter[str]) -> Counter[str]:
    """What `accounted` must find for the faults a Flaky produced."""
    out: Counter[str] = Counter({k: injected[k] for k in TRANSPORT})
    out["truncated"] = injected["cut_at_max_tokens"] + injected["over_max_tokens"] + injected["huge_content"]
    out["invalid_json"] = injected["malformed"] + injected["schema"] + injected["huge_content"]
    out["dropped"] = injected["unknown_op"]
    return out


def flaky_run(db: Path, prefix: str = "flaky") -> tuple[str, Flaky]:
    flaky = Flaky()
    register_flaky(prefix, flaky)
    # Small minibatches: more reflection calls, so every kind of fault is drawn with a margin.
    run_id = run_sim(db, *SMALL, "minibatch_size=3", f"target_model={prefix}/target",
                     f"optimizer_model={prefix}/optimizer", name="flaky models")
    return run_id, flaky


@pytest.fixture
def slept(monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(llm, "_sleep", waits.append)
    return waits


# ---- faults through litellm -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def flaky_store(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    waits: list[float] = []
    mp.setattr(llm, "_sleep", waits.append)
    try:
        db = tmp_path_factory.mktemp("flaky") / "f.db"
        run_id, flaky = flaky_run(db)
    finally:
        mp.undo()
    return db, run_id, flaky, waits


def test_run_with_every_kind_of_fault_completes(flaky_store):
    db, run_id, flaky, waits = flaky_store
    run = Reader(db).run(run_id)
    assert run["status"] == "completed", run["reason"]
    assert set(Reader(db).tests(run_id)) == {"seed", "best", "final", "none"}
    every = set(TARGET_FAULTS) | set(OPTIMIZER_FAULTS) | set(EDIT_FAULTS)
    assert {k for k, n in flaky.injected.items() if n} == every, "the schedule must inject every kind"
    assert RETRY_AFTER_S in waits  # a 429's Retry-After travelled through litellm's exception


def test_every_injected_fault_is_on_its_llm_calls_row(flaky_store):
    db, run_id, flaky, _ = flaky_store
    found, expected = accounted(db, run_id), expected_records(flaky.injected)
    assert {k: found[k] for k in expected} == dict(expected)


def test_unusable_edits_never_reach_the_skill(flaky_store):
    db, run_id, _, _ = flaky_store
    reader = Reader(db)
    edits = reader.edits(run_id)
    kept = [e for e in edits if e["fate"] != "dropped"]  # a dropped edit is stored as proposed, with its reason
    assert kept and all(e["op"] in ("add", "replace", "delete") for e in kept)
    assert max(len(e["content"]) for e in kept) <= 600
    assert all(e["op"] in ("add", "replace", "delete") or e["note"].startswith("malformed: ")
               for e in edits if e["fate"] == "dropped")
    assert "Always route carefully. Always route carefully. Always" not in reader.skill_at(run_id, 10_000)


def test_monitor_shows_model_call_errors_and_notes_apart(flaky_store, monkeypatch):
    db, run_id, _, _ = flaky_store
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page("pages/2_Monitor.py")
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception
    reader = Reader(db)
    counts = reader.one("SELECT SUM(error != '') AS errors, SUM(note != '') AS notes FROM llm_calls "
                        "WHERE run_id = ?", (run_id,))
    usage = reader.usage(run_id)
    assert (usage["errors"], usage["notes"]) == (counts["errors"], counts["notes"])
    assert 0 < usage["errors"] < usage["notes"]  # most faults were survived: notes, not errors
    heading = [m.value for m in at.markdown if m.value.startswith("**Model call faults**")]
    assert heading == [f"**Model call faults** · {usage['errors']:,} error(s) · {usage['notes']:,} note(s)"]
    shown_tables = tables(at)
    shown = next(t for t in shown_tables if "note" in t.columns and "attempts" in t.columns)
    latest = reader.call_faults(run_id, 20)
    assert list(shown["error"]) == [c["error"] for c in latest]
    assert list(shown["note"]) == [c["note"] for c in latest]
    assert any(n and not e for e, n in zip(shown["error"], shown["note"]))  # a survived fault: a note only
    by_stage = next(t for t in shown_tables if "errors" in t.columns)
    assert (by_stage["errors"].astype(int).sum(), by_stage["notes"].astype(int).sum()) == (usage["errors"],
                                                                                          usage["notes"])


# ---- faults of the simulated models ---------------------------------------------------------------

class SimCounter:
    """Counts the simulated models' own injected faults (transport kinds and malformed JSON)."""

    def __init__(self, monkeypatch):
        self.injected: Counter[str] = Counter()
        inject, answer = sim._inject_faults, sim_optimizer.answer

        def counting_inject(name, opts, text):
            try:
                inject(name, opts, text)
            except ProviderError as exc:
                self.injected[exc.kind] += 1
                raise

        def counting_answer(messages, opts):
            reply = answer(messages, opts)
            fenced = re.search(r"```json\n(.*)\n```", reply, re.S)
            try:
                json.loads(fenced.group(1) if fenced else reply)
            except ValueError:  # the simulator cut its reply short
                self.injected["malformed"] += 1
            return reply

        monkeypatch.setattr(sim, "_inject_faults", counting_inject)
        monkeypatch.setattr(sim_optimizer, "answer", counting_answer)


SIM_TARGET = "sim/target?timeout=0.04&rate_limit=0.04&server=0.04&connection=0.04&empty=0.04"
SIM_OPTIMIZER = "sim/optimizer?malformed=0.4&server=0.1&rate_limit=0.05"


def sim_fault_run(db: Path, monkeypatch) -> tuple[str, Counter[str]]:
    counter = SimCounter(monkeypatch)
    monkeypatch.setattr(llm, "_sleep", lambda s: None)
    run_id = run_sim(db, *SMALL, f"target_model={SIM_TARGET}", f"optimizer_model={SIM_OPTIMIZER}")
    return run_id, counter.injected


def test_simulated_model_faults_are_survived_and_recorded(tmp_path, monkeypatch):
    db = tmp_path / "s.db"
    run_id, injected = sim_fault_run(db, monkeypatch)
    assert Reader(db).run(run_id)["status"] == "completed"
    assert all(injected[k] for k in (*TRANSPORT, "malformed"))
    found = accounted(db, run_id)
    assert {k: found[k] for k in TRANSPORT} == {k: injected[k] for k in TRANSPORT}
    assert found["invalid_json"] == injected["malformed"]


# ---- dead models fail the run with a reason ----------------------------------------------------------

DEAD = {
    "target, every call times out": (("target_model=sim/target?timeout=1",), "sim/target?timeout=1"),
    "target, bad key": (("target_model=sim/target?auth=1",), "sim/target?auth=1"),
    "optimizer, every call errors": (("optimizer_model=sim/optimizer?error=1",), "sim/optimizer?error=1"),
    "target via litellm, always 500": (("target_model=dead/target",), "dead/target"),
}


def dead_run(db: Path, overrides: tuple[str, ...]) -> str:
    register_flaky("dead", Flaky(target_faults={"server": 1.0}, optimizer_faults={"server": 1.0}, edit_faults={}))
    return run_sim(db, *SMALL, *overrides)


@pytest.mark.parametrize("case", DEAD, ids=list(DEAD))
def test_a_dead_model_fails_the_run_naming_it(tmp_path, slept, case):
    overrides, model = DEAD[case]
    db = tmp_path / "d.db"
    run_id = dead_run(db, overrides)
    reader = Reader(db)
    run = reader.run(run_id)
    assert run["status"] == "failed"
    assert model in run["reason"] and "\n" not in run["reason"]
    assert reader.tests(run_id) == {}  # no all-zero test scores were published
    assert reader.call_errors(run_id)


# ---- budgets ------------------------------------------------------------------------------------

PRICE = 0.001  # USD per simulated call


def priced(name, messages, settings, response_format):
    answer = sim.handle(name, messages, settings, response_format)
    return HandlerResult(answer.text, answer.prompt_tokens, answer.completion_tokens, PRICE)


def after_crossing(rows: list[dict], limit: float, key: str) -> int:
    """How many calls completed after the running total first reached `limit`."""
    total = 0.0
    for n, row in enumerate(rows):
        total += row[key]
        if total >= limit:
            return len(rows) - n - 1
    return 0


@pytest.mark.parametrize("budget", ["max_calls=150", "max_cost_usd=0.15"])
def test_budget_is_kept_and_the_best_skill_survives(tmp_path, budget):
    register_provider("priced", priced)
    db = tmp_path / "b.db"
    run_id = run_sim(db, *SMALL, "target_model=priced/target", "optimizer_model=priced/optimizer",
                     "max_concurrency=4", budget)
    reader = Reader(db)
    run = reader.run(run_id)
    assert run["status"] == "budget_exhausted" and "reached" in run["reason"]
    rows = reader.q("SELECT cost_usd, 1 AS calls FROM llm_calls WHERE run_id = ? AND cached = 0 ORDER BY id",
                    (run_id,))
    if budget.startswith("max_calls"):
        assert len(rows) <= 150
    else:
        spent = sum(r["cost_usd"] for r in rows)
        assert 0.15 <= spent <= 0.15 + 4 * PRICE + 1e-9
        assert after_crossing(rows, 0.15, "cost_usd") <= 4  # only calls already in flight
    out = export.export_run(reader, run_id, tmp_path / "export")
    best = (tmp_path / "export" / "best_skill.md").read_text(encoding="utf-8")
    assert best == reader.best_skill(run_id) and best.strip() and len(out) == 3
