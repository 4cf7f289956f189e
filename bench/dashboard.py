"""Dashboard render time on a big run: 500 steps, over 100,000 rollout rows.

    python bench/dashboard.py [--steps 500] [--db PATH] [--keep]

Builds a synthetic run through the store's real write path -- skillopt.events dataclasses
handed to Store.__call__ (and Store.record_call for the per-call accounting rows), exactly
as the trainer records a run, no raw SQL -- then renders the Monitor, Skill evolution, Gate
timeline and Rollouts pages with Streamlit's AppTest (app.py as the entry point, then
switch_page, with ?run=<id>). Each page is rendered twice in one session: the first render
pays the queries, the second is what a user pays on every interaction (the data cache is
warm). The run: 400 train / 100 selection / 200 test items, batch 40 (10 steps per epoch),
paired gate (incumbent and candidate rows every step), a slow update every epoch, a skill
that grows to ~80 lines. Then every page in headless chromium (bench/browser_render.py): the
first render on a server that has served no page yet, in a fresh browser context, and the
rerender of the same page in that context; targets < 2 s first, < 1 s rerender. The last line
is one JSON object, also saved to bench/results/dashboard.json.

Rule of every bench (bench/README.md): a reference arm emulates the published behaviour
(gate_mode=strict, use_cache=false), and in every arm a test evaluation of a skill text already
tested in the run is counted once. This bench counts no calls and has no reference arm: its
baseline is each page's first render.
"""
from __future__ import annotations

import argparse
import hashlib
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import browser_render  # noqa: E402  (bench/ is the script's folder, first on sys.path)
from benchkit import finish  # noqa: E402
from skillopt import events as ev  # noqa: E402
from skillopt import gate  # noqa: E402
from skillopt.config import load_config  # noqa: E402
from skillopt.events import EditOutcome  # noqa: E402
from skillopt.models.llm import CallRecord  # noqa: E402
from skillopt.patch import Edit  # noqa: E402
from skillopt.reflect import MinibatchResult  # noqa: E402
from skillopt.state import RejectedEdit  # noqa: E402
from skillopt.skill import sha  # noqa: E402
from skillopt.store.writer import Store  # noqa: E402
from skillopt.tasks.task import Evaluation, Item, Trajectory  # noqa: E402

PAGES = {"Monitor": "pages/2_Monitor.py", "Skill evolution": "pages/3_Skill_evolution.py",
         "Gate timeline": "pages/4_Gate_timeline.py", "Rollouts": "pages/7_Rollouts.py"}
TARGET_S = 1.5
N_TRAIN, N_SELECTION, N_TEST, BATCH = 400, 100, 200, 40
LABELS = ("standard", "freight", "air", "ground", "review", "hold", "consolidate", "courier")
SEED_SKILL = "# Dispatch routing\n\nChoose the route for each order.\n\n## Rules\n\n- Default route: standard.\n"
MAX_RULES = 80


def unit(*parts: object) -> float:
    """A deterministic number in [0, 1) from its inputs (no global random state)."""
    digest = hashlib.sha256("\x00".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64


def make_items(split: str, n: int) -> list[Item]:
    return [Item(id=f"{split}-{i:04d}", split=split, expected=LABELS[i % len(LABELS)],
                 input={"order": f"{'Z' if i % 5 == 0 else 'A'}-{10_000 + i}", "customer": f"Customer {i % 37}",
                        "items": f"{1 + i % 4} x item {i % 23}", "total": f"${(i * 37) % 4000}.00"})
            for i in range(n)]


def trajectory(item: Item, ok: bool) -> Trajectory:
    answer = item.expected if ok else LABELS[(LABELS.index(item.expected) + 1) % len(LABELS)]
    feedback = f"correct: {item.expected}" if ok else f"chose '{answer}' but expected '{item.expected}'"
    return Trajectory(item_id=item.id, prompt=f"Choose the route.\nOrder: {item.input['order']}\n"
                                              f"Customer: {item.input['customer']}\nTotal: {item.input['total']}",
                      output=answer, expected=item.expected, evaluation=Evaluation(float(ok), float(ok), feedback))


def rollouts(skill: str, items: list[Item], score: float) -> tuple[Trajectory, ...]:
    """Per-item results of `skill`: an item passes when a hash of (skill, item) falls under `score`."""
    skill_sha = sha(skill)
    return tuple(trajectory(it, unit(skill_sha, it.id) < score) for it in items)


def candidate_rollouts(candidate: str, items: list[Item], incumbent: dict[str, float],
                       good: bool) -> tuple[Trajectory, ...]:
    """A candidate mostly agrees with the incumbent item by item: it fixes some failures and
    breaks some successes (a good edit fixes more), as real edits do."""
    fix, brk = (0.1, 0.03) if good else (0.03, 0.06)
    skill_sha = sha(candidate)
    return tuple(trajectory(it, unit(skill_sha, it.id) >= brk if incumbent[it.id] else unit(skill_sha, it.id) < fix)
                 for it in items)


def value_of(trajs: tuple[Trajectory, ...]) -> dict[str, float]:
    return {t.item_id: t.evaluation.hard for t in trajs}


class Builder:
    """Plays the trainer's part: emits the events of a 500-step run into a Store."""

    def __init__(self, store: Store, steps: int):
        self.store, self.steps = store, steps
        self.run_id = f"bench-{steps}-steps"
        self.train, self.selection, self.test = (make_items("train", N_TRAIN),
                                                 make_items("selection", N_SELECTION), make_items("test", N_TEST))
        self.steps_per_epoch = N_TRAIN // BATCH
        self.rows = 0

    def emit(self, event: ev.Event) -> None:
        if isinstance(event, ev.RolloutsDone):
            self.rows += len(event.trajectories)
        self.store(event)

    def calls(self, step: int, stage: str, role: str, n: int, cached: int = 0) -> None:
        for i in range(n):
            self.store.record_call(CallRecord(
                run_id=self.run_id, step=step, role=role, stage=stage,
                model="sim/target" if role == "target" else "sim/optimizer",
                prompt_tokens=900 if role == "target" else 4200, completion_tokens=4 if role == "target" else 380,
                cost_usd=0.0, latency_s=0.05, cached=i < cached, error="", attempts=1, created_at=time.time()))

    def evaluate(self, step: int, split: str, purpose: str, skill: str, items: list[Item], score: float,
                 cached: bool, trajs: tuple[Trajectory, ...] = ()) -> tuple[Trajectory, ...]:
        trajs = trajs or rollouts(skill, items, score)
        self.emit(ev.RolloutsDone(run_id=self.run_id, step=step, split=split, purpose=purpose, skill_sha=sha(skill),
                                  trajectories=trajs, cached=(cached,) * len(trajs)))
        if not cached:
            self.calls(step, "gate" if split == "selection" else "rollout" if split == "train" else "slow_update"
                       if purpose.startswith("slow") else "test", "target", len(trajs))
        return trajs

    def build(self) -> str:
        config = load_config(None, ["target_model=sim/target", "optimizer_model=sim/optimizer", "gate_mode=paired",
                                    f"num_epochs={self.steps // self.steps_per_epoch}"])
        self.store.create_run(run_id=self.run_id, name=f"bench: synthetic {self.steps}-step run",
                              task="synthetic-bench", task_path="", config_json=config.to_json(), simulated=True,
                              items=[*self.train, *self.selection, *self.test], seed_skill=SEED_SKILL)
        self.emit(ev.RunStarted(run_id=self.run_id, total_steps=self.steps, steps_per_epoch=self.steps_per_epoch,
                                resumed=False))
        skill, score = SEED_SKILL, 0.3
        incumbent = self.evaluate(0, "selection", "gate_current", skill, self.selection, score, cached=False)
        values = value_of(incumbent)
        state = ev.State(step=0, skill=skill, current_score=score, best_skill=skill, best_score=score, best_step=0,
                         epoch_start_skill=skill)
        self.emit(ev.SeedScored(run_id=self.run_id, skill=skill, score=score, state=state))
        rules = 0
        for step in range(1, self.steps + 1):
            epoch = (step - 1) // self.steps_per_epoch + 1
            self.emit(ev.StageChanged(run_id=self.run_id, step=step, epoch=epoch, stage="rollout"))
            order = sorted(self.train, key=lambda it: unit("order", epoch, it.id))
            i = (step - 1) % self.steps_per_epoch
            batch = self.evaluate(step, "train", "train", skill, order[i * BATCH:(i + 1) * BATCH], score, False)
            failures = [t.item_id for t in batch if not t.evaluation.hard]
            minibatches = tuple(MinibatchResult(
                index=m, kind="failure" if m < 3 else "success", item_ids=tuple(failures[m * 8:(m + 1) * 8]),
                ok=unit("mb", step, m) > 0.05, summary=f"step {step}: orders with code Z go the wrong route",
                edits=(Edit("add", content=f"- Rule {step}.{m}: Z orders ship freight.", section="Rules",
                            rationale="several failures share it", source="failure"),))
                for m in range(5))
            self.emit(ev.ReflectionDone(run_id=self.run_id, step=step, minibatches=minibatches))
            self.calls(step, "reflect", "optimizer", 5)
            # the candidate: one new rule (or a rewritten one once the skill is long)
            if rules < MAX_RULES:
                edit = Edit("add", content=f"- Rule {step}: orders of kind {step % 13} route "
                                           f"{LABELS[step % len(LABELS)]}.", section="Rules", source="failure",
                            rationale=f"{len(failures)} failures in step {step}", support=2)
                candidate = skill + edit.content + "\n"
            else:
                old = next(line for line in skill.splitlines() if line.startswith("- Rule "))
                edit = Edit("replace", target=old, content=f"- Rule {step}: kind {step % 13} routes "
                                                            f"{LABELS[step % len(LABELS)]}.", source="failure")
                candidate = skill.replace(old, edit.content, 1)
            self.emit(ev.StageChanged(run_id=self.run_id, step=step, epoch=epoch, stage="gate"))
            incumbent = self.evaluate(step, "selection", "gate_current", skill, self.selection, score, cached=True,
                                      trajs=tuple(trajectory(it, bool(values[it.id])) for it in self.selection))
            cand = self.evaluate(step, "selection", "gate_candidate", candidate, self.selection, 0.0, False,
                                 trajs=candidate_rollouts(candidate, self.selection, values,
                                                          good=unit("good", step) < 0.5))
            decision_ = gate.paired(value_of(incumbent), value_of(cand), [it.id for it in self.selection])
            flipped = tuple((t.item_id, a.evaluation.hard, t.evaluation.hard) for a, t in zip(incumbent, cand)
                            if a.evaluation.hard != t.evaluation.hard)
            outcomes = [EditOutcome(edit=edit, minibatches=(0, 1), fate="selected", status="applied",
                                    gate="accepted" if decision_.accept else "rejected")]
            outcomes += [EditOutcome(edit=m.edits[0], minibatches=(m.index,), fate="merged" if m.index % 2 else
                                     "clipped") for m in minibatches[1:]]
            rejected = state.rejected
            if decision_.accept:
                decision = "accept_new_best" if decision_.candidate_score > (state.best_score or 0) else "accept"
                skill, score, rules = candidate, decision_.candidate_score, rules + (edit.op == "add")
                values = value_of(cand)
                state = ev.State(**{**state.__dict__, "skill": skill, "current_score": score})
                if decision == "accept_new_best":
                    state = ev.State(**{**state.__dict__, "best_skill": skill, "best_score": score,
                                        "best_step": step})
            else:
                decision = "reject"
                rejected = rejected + (RejectedEdit(step, edit, decision_.current_score, decision_.candidate_score,
                                                    "gate"),)
            state = ev.State(**{**state.__dict__, "step": step, "rejected": rejected})
            self.emit(ev.StepCompleted(
                run_id=self.run_id, step=step, epoch=epoch, edit_budget=4, scheduled_budget=4,
                train_hard=sum(t.evaluation.hard for t in batch) / len(batch),
                train_soft=sum(t.evaluation.soft for t in batch) / len(batch), outcomes=tuple(outcomes),
                candidate=candidate, decision=decision, gate=decision_, flipped=flipped, n_minibatches=5,
                n_failed_minibatches=sum(not m.ok for m in minibatches), duration_s=2.5, state=state))
            if step % self.steps_per_epoch == 0:
                state = self.end_epoch(step, epoch, state)
        for which, text in (("seed", SEED_SKILL), ("best", state.best_skill), ("final", state.skill)):
            held_out = 0.3 if which == "seed" else 0.9 * (state.best_score or 0.3)  # test runs below selection
            trajs = self.evaluate(self.steps, "test", f"test_{which}", text, self.test, held_out, cached=False)
            state = ev.State(**{**state.__dict__, "tests_done": state.tests_done + (which,)})
            hard = sum(t.evaluation.hard for t in trajs) / len(trajs)
            self.emit(ev.TestEvaluated(run_id=self.run_id, which=which, skill_sha=sha(text), score=hard, hard=hard,
                                       soft=hard, n_items=len(trajs), state=state))
        self.emit(ev.RunFinished(run_id=self.run_id, status="completed"))
        return self.run_id

    def end_epoch(self, step: int, epoch: int, state: ev.State) -> ev.State:
        self.emit(ev.StageChanged(run_id=self.run_id, step=step, epoch=epoch, stage="slow_update"))
        sample = sorted(self.train, key=lambda it: unit("slow", epoch, it.id))[:20]
        prev = self.evaluate(step, "train", "slow_prev", state.epoch_start_skill, sample, 0.5, cached=False)
        cur = self.evaluate(step, "train", "slow_cur", state.skill, sample, state.current_score or 0.5, cached=False)
        pairs = list(zip(prev, cur))
        comparison = {
            "improved": tuple(a.item_id for a, b in pairs if b.evaluation.hard > a.evaluation.hard),
            "regressed": tuple(a.item_id for a, b in pairs if b.evaluation.hard < a.evaluation.hard),
            "persistent_failure": tuple(a.item_id for a, b in pairs if not a.evaluation.hard and not b.evaluation.hard),
            "stable_success": tuple(a.item_id for a, b in pairs if a.evaluation.hard and b.evaluation.hard)}
        guidance = f"Epoch {epoch}: check the order code before the customer type."
        self.calls(step, "slow_update", "optimizer", 1)
        self.calls(step, "meta", "optimizer", 1)
        self.emit(ev.EpochCompleted(
            run_id=self.run_id, epoch=epoch, step=step, ran_slow_update=epoch >= 2, previous_guidance="",
            guidance=guidance, comparison=comparison, decision="reject" if epoch >= 2 else "",
            meta_skill=f"Meta notes after epoch {epoch}: prefer narrow rules.",
            state=ev.State(**{**state.__dict__, "epoch_start_skill": state.skill, "epochs_done": epoch,
                              "rejected": (), "patterns": (), "accepted": ()})))
        return ev.State(**{**state.__dict__, "epoch_start_skill": state.skill, "epochs_done": epoch,
                           "rejected": (), "patterns": (), "accepted": ()})


def render(db: Path, run_id: str) -> dict[str, tuple[float, float]]:
    os.environ["SKILLOPT_DB"] = str(db)
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    logging.disable(logging.WARNING)  # bare-mode warnings ("no runtime found") of the cache calls are noise

    warm = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    warm.run()  # the first script of a process pays imports (pandas, plotly): not any page's cost
    times = {}
    for name, page in PAGES.items():
        st.cache_data.clear()
        st.cache_resource.clear()
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
        at.switch_page(page)
        at.query_params["run"] = run_id
        renders = []
        for _ in range(2):
            start = time.perf_counter()
            at.run()
            renders.append(time.perf_counter() - start)
            if at.exception:
                raise SystemExit(f"{page} raised: {at.exception[0].message}")
        times[name] = (renders[0], renders[1])
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=500, help="steps of the synthetic run (a multiple of 10)")
    ap.add_argument("--db", help="database to build into (default: a temporary file)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary database and print its path")
    ap.add_argument("--no-save", action="store_true", help="do not overwrite bench/results/dashboard.json")
    ap.add_argument("--no-browser", action="store_true", help="skip the headless chromium measurements")
    ap.add_argument("--repeats", type=int, default=browser_render.REPEATS,
                    help="fresh servers per page in the browser (the figure is their median)")
    ap.add_argument("--pages", help="comma-separated page names to measure in the browser (implies --no-save)")
    args = ap.parse_args()
    pages = tuple(p.strip() for p in args.pages.split(",")) if args.pages else tuple(browser_render.PAGES)
    unknown = [p for p in pages if p not in browser_render.PAGES]
    if unknown or args.repeats < 1:
        raise SystemExit(f"unknown page(s) {unknown}; pages are {', '.join(browser_render.PAGES)}" if unknown
                         else "--repeats must be at least 1")
    tmp = tempfile.mkdtemp(prefix="skillopt-bench-")
    db = Path(args.db) if args.db else Path(tmp) / "dashboard.db"
    if db.exists():
        raise SystemExit(f"{db} exists; give a new path")
    started = time.perf_counter()
    store = Store(db)
    builder = Builder(store, args.steps)
    try:
        run_id = builder.build()
    finally:
        store.close()
    built = time.perf_counter() - started
    print(f"built run {run_id}: {args.steps} steps, {builder.rows:,} rollout rows through Store(event) "
          f"in {built:.1f} s ({db.stat().st_size / 1e6:.0f} MB)")
    times = render(db, run_id)
    print(f"\n{'page':<16} {'first render s':>14} {'second render s':>15}   (target: second < {TARGET_S} s)")
    for name, (first, second) in times.items():
        print(f"{name:<16} {first:>14.2f} {second:>15.2f}   {'ok' if second < TARGET_S else 'SLOW'}")
    browser = {}
    problem = None if args.no_browser else browser_render.missing()
    if args.no_browser or problem:
        print(f"\nbrowser: not measured ({'--no-browser' if args.no_browser else problem})")
    else:
        print(f"\nheadless chromium (targets: first < {browser_render.FIRST_TARGET_S} s, "
              f"rerender < {browser_render.RERENDER_TARGET_S} s):")
        browser = browser_render.figures(browser_render.measure(db, run_id, args.repeats, pages))
    if args.keep or args.db:
        print(f"database kept: {db}")
    else:
        for path in Path(tmp).iterdir():
            path.unlink()
        os.rmdir(tmp)
    finish("dashboard", {"rollout_rows": builder.rows,
                         "render_s": {name: round(second, 3) for name, (_, second) in times.items()},
                         "first_render_s": {name: round(first, 3) for name, (first, _) in times.items()},
                         "steps": args.steps, "build_s": round(built, 1), "target_s": TARGET_S,
                         "met": all(second < TARGET_S for _, second in times.values()), **browser},
           save=not (args.no_save or args.pages))


if __name__ == "__main__":
    main()
