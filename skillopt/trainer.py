"""The training loop: fit(task, config, models, hooks) -> final status.

One step = rollout -> reflect -> aggregate -> select -> apply -> (approval) -> gate.
At each epoch end: slow update (epoch >= 2) and meta skill. At the end: test evaluation
of the seed, best and final skills. Everything the loop learns is emitted as events; the
store records them, and the state in each completing event is what `resume` restarts from.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from typing import Callable, Sequence

from . import ablation, advisor, approval, clues, examples, records, reflect, repeats, schedules, slow, speculation
from . import events as ev, transforms, trials
from .approval import ApprovalDecision
from .config import RunConfig
from .errors import BudgetExhausted, ModelError, StopRequested
from .models.llm import Models
from .patch import Edit, apply_edits
from .plan import Plan
from .rollout import Batch, EvalCache, Evaluator
from .evidence import Evidence, collect
from .lift import field_values, measure
from .skill import guidance, sha
from .records import Update, edit_outcomes
from .screen import Screen
from .state import State
from .tasks.task import Trajectory, expected_text
from .validation import GateResult, Validator
from .vocabulary import ACCEPTED, TRIAL_NAMES, Decision, RunStatus, Stage

PATTERNS_KEPT = 8  # failure summaries kept in the step buffer: enough context, bounded checkpoint


@dataclass(frozen=True)
class Hooks:
    """Everything the loop needs from outside, injected so tests can drive it."""
    callbacks: Sequence[ev.Callback]
    should_stop: Callable[[], bool] = lambda: False
    decisions: Callable[[int], Sequence[ApprovalDecision]] = lambda step: ()
    cache: EvalCache | None = None
    sleep: Callable[[float], None] = time.sleep


class Trainer:
    def __init__(self, task, config: RunConfig, models: Models, hooks: Hooks, run_id: str):
        self.task, self.config, self.models, self.hooks, self.run_id = task, config, models, hooks, run_id
        self.plan = Plan.make(task, config)
        self.evaluator = Evaluator.of(task, models, config, cache=hooks.cache, run_id=run_id, emit=self.emit)
        self.gate = Validator(config, self.plan, self.evaluator, self.evaluate, self.emit, run_id)
        # The trials' gates are paired in either mode; a trial judged alone passes at worked_examples_alpha.
        self.examples_gate, self.trial_gate = (Validator(replace(config, gate_mode="paired", gate_alpha=a), self.plan,
                                                         self.evaluator, self.evaluate, self.emit, run_id)
                                               for a in (config.gate_alpha, config.worked_examples_alpha))
        self.screen = Screen(self.evaluate, self.gate.values, config.fuzzy_anchor_threshold, config.max_error_rate)
        # How the task scores replies picks the reflection's template (a plug-in may not say).
        self.scoring = task.scoring() if hasattr(task, "scoring") else None

    # ---- plumbing -----------------------------------------------------------------
    def emit(self, event: ev.Event) -> None:
        ev.emit(self.hooks.callbacks, event)

    def stop_if_requested(self) -> None:
        if self.hooks.should_stop():
            raise StopRequested()

    def enter(self, step: int, stage: Stage, detail: str = "") -> None:
        """Honour a pending stop request (raises StopRequested), then announce the stage."""
        self.stop_if_requested()
        epoch = self.plan.epoch_of(step) if step else 1
        self.emit(ev.StageChanged(run_id=self.run_id, step=step, epoch=epoch, stage=stage, detail=detail))

    def evaluate(self, skill: str, items, *, step: int, split: str, purpose: str, stage: str) -> Batch:
        batch = self.evaluator.run(skill, items, step=step, split=split, purpose=purpose, stage=stage)
        if batch.dead:
            # The published SkillOpt's worst failure mode: a dead backend (target or judge)
            # silently scores 0. Errored items are left out of every mean; none left is a stop.
            raise ModelError(f"all {len(batch.trajectories)} rollouts failed ({batch.trajectories[0].error}; "
                             f"target {self.models.target.model}); stopping instead of scoring them 0")
        return batch

    def known(self, state: State, step: int) -> tuple[Trajectory, ...]:
        """The incumbent's cached rollouts on the train items of the steps since it became the incumbent (no call)."""
        return self.evaluator.known(state.skill, self.plan.rolled(state.skill_since, step))

    # ---- the run --------------------------------------------------------------------
    def fit(self, state: State | None = None) -> RunStatus:
        plan = self.plan
        self.emit(ev.RunStarted(run_id=self.run_id, total_steps=plan.total_steps,
                                steps_per_epoch=plan.steps_per_epoch, resumed=state is not None))
        status, reason = "completed", ""
        try:
            # Re-entrant: each unit of work takes the last checkpoint and returns the next (resume = enter again).
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
            missing = self.final_tests(state)
            if missing:
                status, reason = "incomplete", f"test scores incomplete: {missing}; resume to retry them"
        except StopRequested:
            status, reason = "stopped", "stop requested"
        except BudgetExhausted as exc:
            status, reason = "budget_exhausted", str(exc)
        except ModelError as exc:
            status, reason = "failed", str(exc)
        finally:
            self.evaluator.close()  # the rollout worker threads live as long as the run
        self.emit(ev.RunFinished(run_id=self.run_id, status=status, reason=reason))
        return status

    def score_seed(self) -> State:
        seed = self.task.seed_skill
        self.enter(0, "gate", "scoring the seed skill on the selection split")
        batch = self.evaluate(seed, self.plan.selection, step=0, split="selection", purpose="gate_current",
                              stage="gate")
        if problem := batch.hopeless(self.config.max_error_rate, self.models.target.model):
            raise ModelError(f"the seed skill on the selection split: {problem}")
        start, chosen, bare = seed, batch, None
        if self.config.gate_seed_against_no_skill and seed.strip():
            # Do no harm: a seed that scores below no skill at all is not where training starts.
            self.enter(0, "gate", "scoring no skill on the selection split: the seed must beat it")
            bare = self.evaluate("", self.plan.selection, step=0, split="selection", purpose="baseline",
                                 stage="gate")
            if self.gate.compare(self.gate.values(batch), self.gate.values(bare)).accept:
                start, chosen = "", bare
        score = self.gate.value(chosen)
        state = State(step=0, skill=start, current_score=score, best_skill=start, best_score=score, best_step=0,
                      epoch_start_skill=start, current_values=tuple(self.gate.values(chosen).items()))
        self.emit(ev.SeedScored(run_id=self.run_id, skill=seed, score=self.gate.value(batch), state=state,
                                no_skill_score=self.gate.value(bare) if bare is not None else None))
        return state

    def train_step(self, step: int, state: State) -> State:
        """One optimisation step. Every `enter` first honours a stop request: a stopped step
        leaves no record, so a resumed run redoes it from the previous checkpoint."""
        started = time.time()
        scheduled = schedules.budget(self.config.lr_scheduler, step - 1, self.plan.total_steps,
                                     self.config.learning_rate, self.config.min_learning_rate)
        # 1. forward pass on the step's train batch
        self.enter(step, "rollout", f"{len(self.plan.batch(step))} train items")
        train = self.evaluate(state.skill, self.plan.batch(step), step=step, split="train", purpose="train",
                              stage="rollout")
        # 2. backprop: the optimizer reads the trajectories and proposes edits
        self.enter(step, "reflect")
        minibatches = self.reflect(step, state, train, scheduled)
        # 3. aggregate the proposals, 4. clip them to the edit budget
        self.enter(step, "aggregate")
        pool = self.aggregate(step, minibatches)
        budget = self.edit_budget(step, state.skill, pool, scheduled)
        self.enter(step, "select", f"budget {budget}")
        selection = repeats.choose(state.tried, state.skill, pool, budget, self.config.fuzzy_anchor_threshold,
                                   person=self.config.approval_mode)
        # 5. apply, 6. a person approves (approval mode)
        update = self.check(step, state.skill, self.update(step, state.skill, selection), train)
        # 7. the validation gate keeps the candidate only if it is strictly better
        candidate = update.candidate(state.skill)
        rejected = state.rejected + records.rejections(step, update, state.current_score)
        decision, state, result = self.validate(step, state, candidate, n_edits=len(update.patch.applied))
        if decision == "reject":
            rejected += records.gate_rejections(step, update.patch.applied, result.decision)
            state = replace(state, tried=state.tried + ((repeats.pair(state.skill, candidate), step),))
        trial, state = self.try_examples(step, state, train) if decision in ("reject", "skip") else (None, state)
        summaries = tuple(m.summary for m in minibatches if m.ok and m.kind == "failure" and m.summary)
        state = replace(state, step=step, rejected=rejected,
                        patterns=(state.patterns + summaries)[-PATTERNS_KEPT:],
                        accepted=state.accepted + (update.patch.applied if decision in ACCEPTED else ())
                        + ((trial.edit,) if trial and trial.decision in ACCEPTED else ()))
        self.emit(ev.StepCompleted(
            run_id=self.run_id, step=step, epoch=self.plan.epoch_of(step), edit_budget=budget,
            scheduled_budget=scheduled, train_hard=train.mean("hard"), train_soft=train.mean("soft"),
            outcomes=edit_outcomes(selection, update, decision, minibatches), candidate=candidate, decision=decision,
            gate=result.decision if result else None, flipped=result.flipped if result else (),
            n_minibatches=len(minibatches), n_failed_minibatches=sum(not m.ok for m in minibatches),
            duration_s=time.time() - started, state=state, train_errors=train.n_errors, examples=trial))
        return state

    # ---- the stages of a step --------------------------------------------------------
    def reflect(self, step: int, state: State, train: Batch, budget: int) -> tuple[reflect.MinibatchResult, ...]:
        minibatches = reflect.reflect(
            self.models.optimizer, state.skill, train.trajectories, budget=budget,
            buffer=reflect.StepBuffer(patterns=state.patterns, rejected=state.rejected),
            meta_skill=state.meta_skill if self.config.use_meta_skill else "", config=self.config, step=step,
            seed=self.plan.step_seed(step), scoring=self.scoring, evidence=self.evidence(step))
        self.emit(ev.ReflectionDone(run_id=self.run_id, step=step, minibatches=tuple(minibatches)))
        return reflect.alive(minibatches, self.models.optimizer.model)

    def evidence(self, step: int) -> Evidence | None:
        """The train tasks seen so far, to check label rules against (a number has no answer to count)."""
        if not self.config.check_evidence or self.scoring is None or self.scoring.kind != "label":
            return None
        return collect(self.plan.train, self.plan.rolled(0, step), self.task.render,
                       repair=self.config.repair_contradicted)

    def aggregate(self, step: int, minibatches: Sequence[reflect.MinibatchResult]) -> list[transforms.Candidate]:
        """Every proposal of the step, normalised, deduplicated, (merged) and ranked."""
        proposals = [transforms.Proposal(edit=e, minibatch=m.index) for m in minibatches for e in m.edits]
        merge = advisor.llm_merge(self.models.optimizer, step) if self.config.merge_mode == "llm" else None
        return transforms.prepare(proposals, dedupe_threshold=self.config.dedupe_threshold, merge=merge)

    def edit_budget(self, step: int, skill: str, pool: list[transforms.Candidate], scheduled: int) -> int:
        """The scheduled budget, or the optimizer's own choice under the autonomous schedule."""
        c = self.config
        if c.lr_scheduler != "autonomous":
            return scheduled
        self.enter(step, "select", "asking the optimizer for the edit budget")
        answer = advisor.choose_budget(self.models.optimizer, skill, [x.edit for x in pool if x.live],
                                       lr=c.learning_rate, min_lr=c.min_learning_rate, step=step)
        return schedules.clamp_autonomous(answer, scheduled, c.learning_rate, c.min_learning_rate,
                                          transforms.live_count(pool))

    def update(self, step: int, skill: str, selection: transforms.Selection) -> Update:
        """Apply the selected edits; in approval mode, re-apply only those a person kept (as
        they wrote them): that apply makes the candidate, so its reports are the edits' record."""
        fuzzy = self.config.fuzzy_anchor_threshold
        patch = apply_edits(skill, selection.selected, fuzzy_threshold=fuzzy)
        reports = dict(zip(selection.selected, patch.reports))
        if not (self.config.approval_mode and patch.applied):
            return Update(patch=patch, reports=reports)
        sources = {x.edit: (n, x.minibatches) for n, x in enumerate(selection.candidates)}
        kept, rejected, approvals = self.wait_for_approval(step, skill, patch.applied, sources)
        final = apply_edits(skill, list(kept.values()), fuzzy_threshold=fuzzy)
        return Update(patch=final, reports=reports | dict(zip(kept, final.reports)), approvals=approvals,
                      human_rejected=tuple(rejected), edited={e: v for e, v in kept.items() if v != e})

    def validate(self, step: int, state: State, candidate: str | None,
                 *, n_edits: int) -> tuple[Decision, State, GateResult | None]:
        """Gate the candidate; while the gate runs, the next batch is rolled out speculatively."""
        if candidate is None:
            return "skip", state, None
        self.enter(step, "gate", f"{n_edits} edits")
        with self.speculate(step, state.skill):
            result = self.gate.run(step, state.skill, candidate, dict(state.current_values), "gate")
        decision, state = self.settle(step, state, candidate, result)
        return decision, state, result

    def try_examples(self, step: int, state: State, train: Batch) -> tuple[ev.ExamplesTrial | None, State]:
        """The step's model-free trial (trials.py), gated alone on the incumbent: its candidate was not kept."""
        c, skill = self.config, state.skill
        known = (*train.trajectories, *self.known(state, step))
        found = trials.offer(c, state, self.task, self.scoring, self.plan, step, train.trajectories, known)
        if not found:
            return None, state
        edit, items, text = found
        what, record = TRIAL_NAMES[edit.source], state.record_of(edit.source)  # the template has no record
        self.enter(step, "gate", f"{what}, gated alone")
        # Examples and rules alone, the template judged once; an ablation was made from no item, rules from every label.
        alone = c.trial_train_items and record is not None or edit.source == "ablation"
        extra = examples.fair(items, known) if alone and edit.source in ("example", "ablation") else ()
        result = (self.trial_gate if alone else self.examples_gate).run(step, skill, text, dict(state.current_values),
            "examples", examples.prior(record, c.worked_examples_alpha) if record and not alone else None, extra)
        judged, record = (result.decision, record) if alone or record is None else \
            examples.pooled(result.decision, record, c.worked_examples_alpha, what)
        judged = clues.explained(judged, edit, result.flipped, self.task.render, self.plan.selection)
        state = state.after_trial(edit.source, record, () if judged.accept else clues.words_of(edit),
                                  ablation.key(edit.target))
        decision, state = self.settle(step, state, text, replace(result, decision=judged))
        return ev.ExamplesTrial(edit=edit, items=items, candidate=text, decision=decision, gate=judged,
                                flipped=result.flipped), state

    def settle(self, step: int, state: State, candidate: str, result: GateResult) -> tuple[Decision, State]:
        """Turn a gate decision into the new incumbent (or not)."""
        d = result.decision
        if not d.accept:
            return "reject", state
        state = replace(state, skill=candidate, current_score=d.candidate_score,
                        current_values=result.candidate_values, skill_since=step)
        if state.best_score is None or d.candidate_score > state.best_score:
            return "accept_new_best", replace(state, best_skill=candidate, best_score=d.candidate_score,
                                              best_step=step)
        return "accept", state

    def speculate(self, step: int, incumbent: str):
        """Warm the cache with the next batch under the incumbent while the gate runs (spare workers only)."""
        c, plan, nxt = self.config, self.plan, step + 1
        due = (c.speculative_rollouts and self.evaluator.workers > 1 and c.use_cache and self.hooks.cache is not None
               and nxt <= plan.total_steps and plan.epoch_of(nxt) == plan.epoch_of(step))
        return speculation.warming(self.evaluator, incumbent, plan.batch(nxt) if due else None, nxt,
                                   self.hooks.should_stop)

    def check(self, step: int, skill: str, update: Update, train: Batch) -> Update:
        """The minibatch check: edits its step's train items contradict leave the candidate."""
        if not self.config.minibatch_check or update.candidate(skill) is None:
            return update
        self.enter(step, "gate", "minibatch check: the candidate on its step's train items")
        patch, dropped = self.screen.check(step, skill, update.patch.applied, self.plan.batch(step),
                                           self.gate.values(train))
        return update if patch is None else update.screened_by(patch, tuple(dropped))

    def wait_for_approval(self, step: int, skill: str, edits: Sequence[Edit], sources: dict):
        self.enter(step, "approval", f"{len(edits)} edits wait for approval")
        self.emit(approval.request(self.run_id, step, skill, edits, sources, self.config.fuzzy_anchor_threshold))
        while not approval.settled(decisions := list(self.hooks.decisions(step)), len(edits)):
            self.stop_if_requested()
            self.hooks.sleep(self.config.approval_poll_s)
        return approval.sort(edits, decisions)

    # ---- epoch end and final tests ---------------------------------------------------
    def end_epoch(self, epoch: int, state: State) -> State:
        c, step, comparison = self.config, state.step, None
        event = ev.EpochCompleted(run_id=self.run_id, epoch=epoch, step=step, ran_slow_update=False)
        if epoch >= 2 and c.use_slow_update:
            event, state, comparison = self.slow_update(epoch, state)
        if epoch >= 2 and c.use_meta_skill:  # an independent switch: it learns from the edits alone too
            self.enter(step, "meta", f"epoch {epoch}: rewriting the meta skill")
            m = slow.meta_update(self.models.optimizer, meta_skill=state.meta_skill, comparison=comparison,
                                 accepted_edits=state.accepted, rejected_edits=state.rejected, step=step, epoch=epoch)
            meta, meta_error = (m.content, "") if m.ok else (state.meta_skill, m.error)
            event = replace(event, ran_meta=True, meta_skill=meta, meta_error=meta_error)
            state = replace(state, meta_skill=meta)
        keep = c.rejected_buffer_scope == "run"
        state = replace(state, epoch_start_skill=state.skill, epochs_done=epoch, patterns=(), accepted=(),
                        rejected=state.rejected if keep else ())
        self.emit(replace(event, state=state))
        return state

    def slow_update(self, epoch: int, state: State) -> tuple[ev.EpochCompleted, State, slow.Comparison]:
        """Momentum: compare the epoch's start and end skills on a train sample, let the
        optimizer rewrite the protected guidance block, and gate it."""
        c, step = self.config, state.step
        self.enter(step, "slow_update", f"epoch {epoch}: comparing with the previous epoch's skill")
        sample = self.plan.slow_sample(epoch)
        prev = self.evaluate(state.epoch_start_skill, sample, step=step, split="train", purpose="slow_prev",
                             stage="slow_update")
        cur = self.evaluate(state.skill, sample, step=step, split="train", purpose="slow_cur", stage="slow_update")
        # Items errored under either skill say nothing about the change: compare the rest.
        comparison = slow.compare(prev.scored, cur.scored)
        result = slow.slow_update(self.models.optimizer, skill=state.skill, previous_skill=state.epoch_start_skill,
                                  comparison=comparison, prev=prev.scored, cur=cur.scored, step=step, epoch=epoch)
        decision, gate_decision, candidate = "failed", None, None
        if result.ok and result.skill != state.skill:
            candidate = result.skill
            if c.slow_update_gate:
                # Written from the sample's cases alone: the incumbent's other train rollouts are fair items.
                fair = examples.fair({it.id for it in sample}, self.known(state, step)) if c.slow_train_items else ()
                gated = self.gate.run(step, state.skill, candidate, dict(state.current_values), "slow_update",
                                      extra=fair)
                gate_decision = gated.decision
                decision, state = self.settle(step, state, candidate, gated)
            else:
                # Forced in without a gate: its per-item values are unknown until the next gate scores it.
                decision, state = "accept", replace(state, skill=candidate, current_values=(), skill_since=step)
        elif result.ok:
            decision = "skip"
        event = ev.EpochCompleted(
            run_id=self.run_id, epoch=epoch, step=step, ran_slow_update=True,
            previous_guidance=guidance(state.epoch_start_skill), guidance=result.guidance,
            comparison=asdict(comparison), decision=decision, gate=gate_decision,
            slow_candidate=candidate, slow_error=result.error)
        return event, state, comparison

    def final_tests(self, state: State) -> str:
        """Score the seed, best and final skills and no skill at all on the test split, then
        the lift; returns what is missing ("" when every score is complete). An incomplete
        score is recorded but not marked done, so resuming evaluates its errored items again."""
        skills = {"seed": self.task.seed_skill, "best": state.best_skill, "final": state.skill, "none": ""}
        missing = []
        for which, skill in skills.items():
            if which in state.tests_done:
                continue
            self.enter(state.step, "test", f"{which} skill on {len(self.plan.test)} test items")
            batch = self.evaluate(skill, self.plan.test, step=state.step, split="test", purpose=f"test_{which}",
                                  stage="test")
            complete = batch.complete(self.config.max_error_rate)
            if complete:  # field scores from one reply an item: none when an item's score is a mean of samples
                scorer = getattr(self.task, "field_scores", None) if self.config.samples_per_item == 1 else None
                fields = field_values(scorer, self.plan.test, batch.trajectories) if scorer else {}
                state = replace(state, tests_done=state.tests_done + (which,),
                                test_values={**state.test_values, which: self.gate.values(batch)},
                                test_fields={**state.test_fields, which: fields})
            else:
                missing.append(f"{which} skill errored on {batch.n_errors} of {len(batch.trajectories)} items")
            self.emit(ev.TestEvaluated(run_id=self.run_id, which=which, skill_sha=sha(skill),
                                       score=self.gate.value(batch), hard=batch.mean("hard"),
                                       soft=batch.mean("soft"), n_items=len(batch.trajectories), state=state,
                                       n_errors=batch.n_errors, complete=complete))
        if not missing:
            self.measure_lift(state)
        return "; ".join(missing)

    def measure_lift(self, state: State) -> None:
        v, expected = state.test_values, {it.id: expected_text(it.expected) for it in self.plan.test}
        # A checkpoint from before per-item test values has none to measure from.
        lift = measure(v["best"], v["seed"], v["none"], expected, rng_seed=self.config.seed,
                       fields=state.test_fields) if {"best", "seed", "none"} <= set(v) else None
        if lift is not None:
            self.emit(ev.LiftMeasured(run_id=self.run_id, metric=self.config.gate_metric, **vars(lift)))


def fit(task, config: RunConfig, models: Models, hooks: Hooks, *, run_id: str,
        state: State | None = None) -> RunStatus:
    """Train (an "auto" gate metric resolved for the task); returns the final status."""
    return Trainer(task, config.for_task(task), models, hooks, run_id).fit(state)
