"""The training loop: fit(task, config, models, hooks) -> final status.

One step = rollout -> reflect -> aggregate -> select -> apply -> (approval) -> gate.
At each epoch end: slow update (epoch >= 2) and meta skill. At the end: test evaluation
of the seed, best and final skills. Everything the loop learns is emitted as events; the
store records them, and the state in each completing event is what `resume` restarts from.
"""
from __future__ import annotations

import dataclasses
import math
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from . import advisor, gate, reflect, schedules, slow, transforms
from . import events as ev
from .config import RunConfig
from .errors import BudgetExhausted, ModelError, StopRequested
from .models.llm import Models
from .patch import Edit, apply_edits
from .plan import Plan
from .rollout import Batch, EvalCache, Evaluator
from .skill import guidance, sha

MAX_PATTERNS = 8  # failure summaries kept in the step buffer: enough context, bounded prompt


@dataclass(frozen=True)
class Decision:
    """A person's decision on one pending edit (approval mode)."""
    status: str  # pending | approved | rejected | edited
    content: str  # the (possibly edited) content


@dataclass(frozen=True)
class Hooks:
    """Everything the loop needs from outside, injected so tests can drive it."""
    callbacks: Sequence[ev.Callback]
    should_stop: Callable[[], bool] = lambda: False
    decisions: Callable[[int], Sequence[Decision]] = lambda step: ()
    cache: EvalCache | None = None
    sleep: Callable[[float], None] = time.sleep


@dataclass(frozen=True)
class GateResult:
    decision: gate.GateDecision
    flipped: tuple[tuple[str, float, float], ...]


class Trainer:
    def __init__(self, task, config: RunConfig, models: Models, hooks: Hooks, run_id: str):
        self.task, self.config, self.models, self.hooks, self.run_id = task, config, models, hooks, run_id
        self.plan = Plan.make(task, config)
        self.evaluator = Evaluator(task, models.target, judge=models.judge, cache=hooks.cache,
                                   use_cache=config.use_cache, workers=config.max_concurrency,
                                   run_id=run_id, emit=self.emit)

    # ---- plumbing -----------------------------------------------------------------
    def emit(self, event: ev.Event) -> None:
        ev.emit(self.hooks.callbacks, event)

    def stage(self, step: int, stage: str, detail: str = "") -> None:
        if self.hooks.should_stop():
            raise StopRequested()
        epoch = self.plan.epoch_of(step) if step else 1
        self.emit(ev.StageChanged(run_id=self.run_id, step=step, epoch=epoch, stage=stage, detail=detail))

    def value(self, batch_or_traj) -> float:
        c = self.config
        if isinstance(batch_or_traj, Batch):
            pairs = [(t.evaluation.hard, t.evaluation.soft) for t in batch_or_traj.trajectories]
            return gate.mean_score(pairs, c.gate_metric, c.gate_mixed_weight)
        e = batch_or_traj.evaluation
        return gate.metric_value(e.hard, e.soft, c.gate_metric, c.gate_mixed_weight)

    def evaluate(self, skill: str, items, *, step: int, split: str, purpose: str, stage: str) -> Batch:
        batch = self.evaluator.run(skill, items, step=step, split=split, purpose=purpose, stage=stage)
        if batch.trajectories and batch.n_errors == len(batch.trajectories):
            # The published SkillOpt's worst failure mode: a dead backend silently scores 0.
            raise ModelError(f"all {len(batch.trajectories)} rollouts of {self.models.target.model} failed "
                             f"({batch.trajectories[0].error}); stopping instead of scoring them 0")
        return batch

    # ---- the run --------------------------------------------------------------------
    def fit(self, state: ev.State | None = None) -> str:
        plan = self.plan
        self.emit(ev.RunStarted(run_id=self.run_id, total_steps=plan.total_steps,
                                steps_per_epoch=plan.steps_per_epoch, resumed=state is not None))
        try:
            if state is None:
                state = self.score_seed()
            while True:
                epochs_due = state.step // plan.steps_per_epoch
                if state.epochs_done < epochs_due:
                    state = self.end_epoch(epochs_due, state)
                elif state.step < plan.total_steps:
                    state = self.train_step(state.step + 1, state)
                else:
                    break
            self.final_tests(state)
        except StopRequested:
            self.emit(ev.RunFinished(run_id=self.run_id, status="stopped", reason="stop requested"))
            return "stopped"
        except BudgetExhausted as exc:
            self.emit(ev.RunFinished(run_id=self.run_id, status="budget_exhausted", reason=str(exc)))
            return "budget_exhausted"
        except ModelError as exc:
            self.emit(ev.RunFinished(run_id=self.run_id, status="failed", reason=str(exc)))
            return "failed"
        finally:
            self.evaluator.close()  # the rollout worker threads live as long as the run
        self.emit(ev.RunFinished(run_id=self.run_id, status="completed"))
        return "completed"

    def score_seed(self) -> ev.State:
        seed = self.task.seed_skill
        self.stage(0, "gate", "scoring the seed skill on the selection split")
        score = self.value(self.evaluate(seed, self.plan.selection, step=0, split="selection",
                                         purpose="gate_current", stage="gate"))
        state = ev.State(step=0, skill=seed, current_score=score, best_skill=seed, best_score=score,
                         best_step=0, epoch_start_skill=seed)
        self.emit(ev.SeedScored(run_id=self.run_id, skill=seed, score=score, state=state))
        return state

    def train_step(self, step: int, state: ev.State) -> ev.State:
        c, plan, started = self.config, self.plan, time.time()
        epoch = plan.epoch_of(step)
        # 1. rollout
        self.stage(step, "rollout", f"{len(plan.batch(step))} train items")
        train = self.evaluate(state.skill, plan.batch(step), step=step, split="train", purpose="train",
                              stage="rollout")
        scheduler = "cosine" if c.lr_scheduler == "autonomous" else c.lr_scheduler
        scheduled = schedules.budget(scheduler, step - 1, plan.total_steps, c.learning_rate, c.min_learning_rate)
        # 2. reflect
        self.stage(step, "reflect")
        minibatches = reflect.reflect(
            self.models.optimizer, state.skill, train.trajectories, budget=scheduled,
            buffer=reflect.StepBuffer(patterns=state.patterns, rejected=state.rejected),
            meta_skill=state.meta_skill if c.use_meta_skill else "", config=c, step=step,
            seed=plan.step_seed(step))
        self.emit(ev.ReflectionDone(run_id=self.run_id, step=step, minibatches=tuple(minibatches)))
        dead = [m for m in minibatches if not m.ok and not m.error.startswith("invalid_json")]
        if minibatches and len(dead) == len(minibatches):
            # A dead optimizer would otherwise skip every step and "complete" having learned nothing.
            raise ModelError(f"all {len(dead)} reflection calls of {self.models.optimizer.model} failed "
                             f"({dead[0].error}); stopping instead of skipping every step")
        # 3. aggregate + 4. select
        self.stage(step, "aggregate")
        proposals = [transforms.Proposal(edit=e, minibatch=m.index) for m in minibatches for e in m.edits]
        merge = advisor.llm_merge(self.models.optimizer, step) if c.merge_mode == "llm" else None
        pool = transforms.prepare(proposals, dedupe_threshold=c.dedupe_threshold, merge=merge)
        budget = scheduled
        if c.lr_scheduler == "autonomous":
            self.stage(step, "select", "asking the optimizer for the edit budget")
            answer = advisor.choose_budget(self.models.optimizer, state.skill, [x.edit for x in pool if x.live],
                                           lr=c.learning_rate, min_lr=c.min_learning_rate, step=step)
            budget = schedules.clamp_autonomous(answer, scheduled, c.learning_rate, c.min_learning_rate,
                                                transforms.pool_size(pool))
        self.stage(step, "select", f"budget {budget}")
        selection = transforms.finish(pool, budget)
        # 5. update
        patch = apply_edits(state.skill, selection.selected, fuzzy_threshold=c.fuzzy_anchor_threshold)
        status = {r.edit: r.status for r in patch.reports}
        approval: dict[Edit, str] = {}
        # 6. manual approval
        human_rejected: list[Edit] = []
        if c.approval_mode and patch.applied:
            sources = {x.edit: x.minibatches for x in selection.candidates}
            approved, human_rejected, approval = self.wait_for_approval(step, state.skill, patch.applied, sources)
            patch = apply_edits(state.skill, approved, fuzzy_threshold=c.fuzzy_anchor_threshold)
        # 7. gate (while it runs, the next batch is rolled out speculatively with the incumbent)
        candidate = patch.text if patch.applied and patch.text != state.skill else None
        result, decision = None, "skip"
        rejected = list(state.rejected) + [reflect.RejectedEdit(step, e, state.current_score or 0.0,
                                                                state.current_score or 0.0, "human")
                                           for e in human_rejected]
        if candidate is not None:
            self.stage(step, "gate", f"{len(patch.applied)} edits")
            with self.speculate(step, state.skill):
                result = self.run_gate(step, state.skill, candidate, state.current_score, "gate")
            decision, state = self.settle(step, state, candidate, result.decision)
            if decision == "reject":
                rejected += [reflect.RejectedEdit(step, e, result.decision.current_score,
                                                  result.decision.candidate_score, "gate") for e in patch.applied]
        gate_outcome = {"skip": "skipped", "reject": "rejected"}.get(decision, "accepted")
        outcomes = tuple(ev.EditOutcome(
            edit=cand.edit, minibatches=cand.minibatches, fate=cand.fate,
            status=status.get(cand.edit, ""), approval=approval.get(cand.edit, ""),
            gate=gate_outcome if status.get(cand.edit) == "applied"
            and approval.get(cand.edit, "approved") != "rejected" else "")
            for cand in selection.candidates)
        patterns = state.patterns + tuple(m.summary for m in minibatches if m.ok and m.kind == "failure" and m.summary)
        accepted = state.accepted + (patch.applied if decision.startswith("accept") else ())
        state = replace(state, step=step, rejected=tuple(rejected), patterns=patterns[-MAX_PATTERNS:],
                        accepted=accepted)
        self.emit(ev.StepCompleted(
            run_id=self.run_id, step=step, epoch=epoch, edit_budget=budget, scheduled_budget=scheduled,
            train_hard=train.mean("hard"), train_soft=train.mean("soft"), outcomes=outcomes,
            candidate=candidate, decision=decision, gate=result.decision if result else None,
            flipped=result.flipped if result else (), n_minibatches=len(minibatches),
            n_failed_minibatches=sum(not m.ok for m in minibatches), duration_s=time.time() - started,
            state=state))
        return state

    def settle(self, step: int, state: ev.State, candidate: str, d: gate.GateDecision) -> tuple[str, ev.State]:
        """Turn a gate decision into the new incumbent (or not)."""
        if not d.accept:
            return "reject", state
        state = replace(state, skill=candidate, current_score=d.candidate_score)
        if state.best_score is None or d.candidate_score > state.best_score:
            return "accept_new_best", replace(state, best_skill=candidate, best_score=d.candidate_score,
                                              best_step=step)
        return "accept", state

    def run_gate(self, step: int, current: str, candidate: str, current_score: float | None,
                 stage: str) -> GateResult:
        c, items = self.config, self.plan.selection
        if c.gate_mode == "paired" and c.use_gate:
            return self.paired_gate(step, current, candidate, stage)
        batch = self.evaluate(candidate, items, step=step, split="selection", purpose=f"{stage}_candidate",
                              stage=stage)
        score = self.value(batch)
        before = current_score if current_score is not None else 0.0
        d = gate.strict(before, score, len(items))
        if not c.use_gate:
            d = dataclasses.replace(d, accept=True, reason="gate disabled")
        incumbent = {it.id: self.evaluator.cached(current, it) for it in items}
        flipped = tuple((t.item_id, self.value(incumbent[t.item_id]), self.value(t)) for t in batch.trajectories
                        if incumbent.get(t.item_id) is not None
                        and self.value(incumbent[t.item_id]) != self.value(t))
        return GateResult(d, flipped)

    def paired_gate(self, step: int, current: str, candidate: str, stage: str) -> GateResult:
        """Walk items in a seeded order; stop as soon as the outcome cannot change.

        The incumbent's per-item values come from the evaluation cache (it was scored
        when it became the incumbent); only the candidate's evaluation stops early.
        """
        c = self.config
        items = {it.id: it for it in self.plan.selection}
        incumbent = self.evaluate(current, list(items.values()), step=step, split="selection",
                                  purpose="gate_current", stage=stage).by_item
        values = {i: self.value(t) for i, t in incumbent.items()}
        # The incumbent's weakest items first: only there can the candidate gain, so a
        # candidate that fixes too little is rejected after those few items. Any order gives
        # the full evaluation's decision (PairedGate's bounds are exact); this one stops soonest
        # on rejects, the common case once a run matures. Ties keep the seeded shuffle.
        order = sorted(gate.order_items(list(items), self.plan.step_seed(step)), key=values.__getitem__)
        pg = gate.PairedGate(values, order, min_delta=c.gate_min_delta, alpha=c.gate_alpha)
        trajs, hits, flipped = [], [], []
        for item_id in pg.items:
            if pg.done:
                break
            traj, hit = self.evaluator.one(candidate, items[item_id], step=step, stage=stage)
            pg = pg.observe(item_id, self.value(traj))
            trajs.append(traj), hits.append(hit)
            before, after = self.value(incumbent[item_id]), self.value(traj)
            if before != after:
                flipped.append((item_id, before, after))
        self.emit(ev.RolloutsDone(run_id=self.run_id, step=step, split="selection", purpose=f"{stage}_candidate",
                                  skill_sha=sha(candidate), trajectories=tuple(trajs), cached=tuple(hits)))
        if trajs and all(t.error for t in trajs):
            raise ModelError(f"all gate rollouts of {self.models.target.model} failed ({trajs[0].error})")
        return GateResult(whole_split_scores(pg.decision(), values, trajs, self.value), tuple(flipped))

    @contextmanager
    def speculate(self, step: int, incumbent: str):
        """Warm the cache with the next batch under the incumbent while the gate runs.

        Kept when the gate rejects (the next step rolls out the same skill on those items),
        wasted when it accepts; either way the decisions are those of sequential execution.
        """
        c, plan, nxt = self.config, self.plan, step + 1
        if not (c.speculative_rollouts and c.use_cache and self.hooks.cache is not None
                and nxt <= plan.total_steps and plan.epoch_of(nxt) == plan.epoch_of(step)):
            yield
            return
        with ThreadPoolExecutor(max_workers=1) as pool:
            future = pool.submit(self.warm, incumbent, plan.batch(nxt), nxt)
            yield
        future.result()  # surface a budget or model error of the speculation

    def warm(self, skill: str, items, step: int) -> None:
        for item in items:
            if self.hooks.should_stop():
                return
            self.evaluator.one(skill, item, step=step, stage="rollout")

    def wait_for_approval(self, step: int, skill: str, edits: Sequence[Edit], sources: dict):
        self.stage(step, "approval", f"{len(edits)} edits wait for approval")
        diffs = tuple(apply_edits(skill, [e], fuzzy_threshold=self.config.fuzzy_anchor_threshold).diff for e in edits)
        self.emit(ev.ApprovalRequested(run_id=self.run_id, step=step, edits=tuple(edits), diffs=diffs,
                                       minibatches=tuple(sources.get(e, ()) for e in edits)))
        while True:
            decisions = list(self.hooks.decisions(step))
            if len(decisions) == len(edits) and all(d.status != "pending" for d in decisions):
                break
            if self.hooks.should_stop():
                raise StopRequested()
            self.hooks.sleep(self.config.approval_poll_s)
        approved, rejected, approval = [], [], {}
        for edit, d in zip(edits, decisions):
            approval[edit] = d.status
            if d.status == "rejected":
                rejected.append(edit)
            else:
                kept = replace(edit, content=d.content, source=edit.source) if d.status == "edited" else edit
                approved.append(kept)
        return approved, rejected, approval

    def end_epoch(self, epoch: int, state: ev.State) -> ev.State:
        c, step = self.config, state.step
        event = dict(run_id=self.run_id, epoch=epoch, step=step, ran_slow_update=False)
        if epoch >= 2 and c.use_slow_update:
            self.stage(step, "slow_update", f"epoch {epoch}: comparing with the previous epoch's skill")
            sample = self.plan.slow_sample(epoch)
            prev = self.evaluate(state.epoch_start_skill, sample, step=step, split="train", purpose="slow_prev",
                                 stage="slow_update")
            cur = self.evaluate(state.skill, sample, step=step, split="train", purpose="slow_cur",
                                stage="slow_update")
            comparison = slow.compare(prev.trajectories, cur.trajectories)
            result = slow.slow_update(self.models.optimizer, skill=state.skill,
                                      previous_skill=state.epoch_start_skill, comparison=comparison,
                                      prev=prev.trajectories, cur=cur.trajectories, step=step, epoch=epoch)
            decision, gate_decision, candidate = "failed", None, None
            if result.ok and result.skill != state.skill:
                candidate = result.skill
                if c.slow_update_gate:
                    gr = self.run_gate(step, state.skill, candidate, state.current_score, "slow_update")
                    gate_decision = gr.decision
                    decision, state = self.settle(step, state, candidate, gr.decision)
                else:
                    decision, state = "accept", replace(state, skill=candidate)
            elif result.ok:
                decision = "skip"
            meta, meta_error = state.meta_skill, ""
            if c.use_meta_skill:
                self.stage(step, "meta", f"epoch {epoch}: rewriting the meta skill")
                m = slow.meta_update(self.models.optimizer, meta_skill=state.meta_skill, comparison=comparison,
                                     accepted_edits=state.accepted, rejected_edits=state.rejected,
                                     step=step, epoch=epoch)
                meta, meta_error = (m.content, "") if m.ok else (state.meta_skill, m.error)
            state = replace(state, meta_skill=meta)
            event.update(ran_slow_update=True, previous_guidance=guidance(state.epoch_start_skill),
                         guidance=result.guidance, comparison=dataclasses.asdict(comparison),
                         decision=decision, gate=gate_decision, slow_candidate=candidate,
                         slow_error=result.error, meta_skill=meta, meta_error=meta_error)
        keep = c.rejected_buffer_scope == "run"
        state = replace(state, epoch_start_skill=state.skill, epochs_done=epoch, patterns=(), accepted=(),
                        rejected=state.rejected if keep else ())
        self.emit(ev.EpochCompleted(state=state, **event))
        return state

    def final_tests(self, state: ev.State) -> None:
        skills = {"seed": self.task.seed_skill, "best": state.best_skill, "final": state.skill}
        for which, skill in skills.items():
            if which in state.tests_done:
                continue
            self.stage(state.step, "test", f"{which} skill on {len(self.plan.test)} test items")
            batch = self.evaluate(skill, self.plan.test, step=state.step, split="test", purpose=f"test_{which}",
                                  stage="test")
            state = replace(state, tests_done=state.tests_done + (which,))
            self.emit(ev.TestEvaluated(run_id=self.run_id, which=which, skill_sha=sha(skill),
                                       score=self.value(batch), hard=batch.mean("hard"), soft=batch.mean("soft"),
                                       n_items=len(batch.trajectories), state=state))


def whole_split_scores(d: gate.GateDecision, incumbent: dict[str, float], trajs, value) -> gate.GateDecision:
    """Restate a paired decision's scores over the whole selection split.

    PairedGate scores the items it evaluated; after an early stop that subset is the
    incumbent's weakest items (evaluated first), so its means are not comparable with the
    incumbent's or the best skill's whole-split scores, and `best` would lag behind the
    accepted skills. The incumbent's score is its whole-split mean (it is scored on every
    item); the candidate's is that plus the observed gains over the whole split, items not
    evaluated counting as unchanged. A full evaluation gives the plain means.
    """
    n = len(incumbent)
    if not n:
        return d
    current = math.fsum(incumbent.values()) / n
    gain = math.fsum(value(t) - incumbent[t.item_id] for t in trajs) / n
    return dataclasses.replace(d, current_score=current, candidate_score=current + gain, margin=gain)


def fit(task, config: RunConfig, models: Models, hooks: Hooks, *, run_id: str,
        state: ev.State | None = None) -> str:
    """Train; returns the final status (completed | stopped | failed | budget_exhausted)."""
    return Trainer(task, config, models, hooks, run_id).fit(state)
