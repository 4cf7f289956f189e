"""The words the engine, the store, the dashboard and the tests share, defined once.

Each vocabulary is a tuple of its words, so code can validate and iterate them, and a
`Literal` type, so signatures say which word is expected. A word means one thing
everywhere: a *stage* is where the training loop is, a *call stage* is why a model was
called, an edit's *fate* is what the edit pipeline did with it, its *status* is what
applying it to the skill did, and a *decision* is the gate's verdict on a candidate.
"""
from __future__ import annotations

from typing import Literal

# Where the training loop is (the stage strip of the Monitor page, the runs.stage column).
Stage = Literal["rollout", "reflect", "aggregate", "select", "approval", "gate", "slow_update", "meta",
                "test", "done"]
STAGES: tuple[Stage, ...] = ("rollout", "reflect", "aggregate", "select", "approval", "gate", "slow_update",
                             "meta", "test", "done")

# Why a model was called (the llm_calls.stage column): the loop stages that call models,
# plus the optimizer's helper calls (merge, rank, lr = the autonomous edit budget), the
# judge, and the dashboard's connectivity check.
CallStage = Literal["rollout", "reflect", "merge", "rank", "lr", "gate", "examples", "slow_update", "meta", "test",
                    "judge", "preflight"]
CALL_STAGES: tuple[CallStage, ...] = ("rollout", "reflect", "merge", "rank", "lr", "gate", "examples", "slow_update",
                                      "meta", "test", "judge", "preflight")

# The three models of a run.
Role = Literal["target", "optimizer", "judge"]
ROLES: tuple[Role, ...] = ("target", "optimizer", "judge")
# The prefix of the simulated models (sim/target, sim/optimizer): a run using one is simulated.
SIM_PREFIX = "sim/"

# What the edit pipeline did with a proposed edit (transforms): still in the pool, chosen
# within the edit budget, cut by the budget, folded into a near-duplicate, unusable, or
# dropped before the pipeline (by the reflection's checks, with a DropReason).
Fate = Literal["pending", "selected", "clipped", "merged", "invalid", "dropped"]
FATES: tuple[Fate, ...] = ("pending", "selected", "clipped", "merged", "invalid", "dropped")

# Why the reflection step dropped a proposed edit before the pipeline saw it: it repeats an
# edit the gate or a person rejected alone, still holds a template slot, is longer than an
# edit may be, names a line or section the skill does not have, is no usable edit at all
# (unknown op, content that is not text, no content), came after the reply's edit limit, is
# contradicted by the train data (its trigger words mostly come with another answer), or is
# mostly the reflection prompt's own wording or the tasks' shared text copied back (echo).
DropReason = Literal["repeat_of_rejected", "template_slot", "too_long", "bad_anchor", "malformed", "over_cap",
                     "contradicted", "echo"]
DROP_REASONS: tuple[DropReason, ...] = ("repeat_of_rejected", "template_slot", "too_long", "bad_anchor", "malformed",
                                        "over_cap", "contradicted", "echo")

# What applying a selected edit to the skill did (patch).
EditStatus = Literal["applied", "anchor_not_found", "ambiguous_anchor", "protected", "duplicate", "noop"]
EDIT_STATUSES: tuple[EditStatus, ...] = ("applied", "anchor_not_found", "ambiguous_anchor", "protected",
                                         "duplicate", "noop")

# A person's decision on one edit in approval mode.
Approval = Literal["pending", "approved", "rejected", "edited"]
APPROVALS: tuple[Approval, ...] = ("pending", "approved", "rejected", "edited")
FINAL_APPROVALS: tuple[Approval, ...] = ("approved", "rejected", "edited")

# The gate's verdict on a step's (or a slow update's) candidate skill. "skip": there was
# no candidate (nothing applied); "failed": the slow update's optimizer call failed.
Decision = Literal["accept", "accept_new_best", "reject", "skip", "failed"]
DECISIONS: tuple[Decision, ...] = ("accept", "accept_new_best", "reject", "skip", "failed")
ACCEPTED: tuple[Decision, ...] = ("accept", "accept_new_best")

# What the gate did to one edit of the candidate (the per-edit view of a Decision).
GateOutcome = Literal["accepted", "rejected", "skipped"]
GATE_OUTCOMES: tuple[GateOutcome, ...] = ("accepted", "rejected", "skipped")

# Why a rejected edit is remembered: the gate rejected its candidate, a person did, or the
# minibatch check found it hurt on its step's train items.
RejectionReason = Literal["gate", "human", "check"]

# A run's lifecycle in the store. "incomplete": the run finished, but a final test score
# misses more items (model errors) than max_error_rate allows; resuming retries them.
RunStatus = Literal["pending", "running", "waiting_approval", "stopping", "completed", "incomplete", "stopped",
                    "failed", "budget_exhausted"]
LIVE_STATUSES: tuple[RunStatus, ...] = ("pending", "running", "waiting_approval", "stopping")
FINAL_STATUSES: tuple[RunStatus, ...] = ("completed", "incomplete", "stopped", "failed", "budget_exhausted")

# What a model-free trial tried, by its edit's source (the gate_decisions.trial column): the
# store's notes and log lines and the Gate timeline name each trial the same way.
TRIAL_NAMES = {"example": "worked examples", "template": "reply template", "rule": "clue rules",
               "ablation": "seed ablation"}

# Which skill a final test evaluation scored; "none" is the target with an empty skill, the
# bar a trained skill must clear (a weak seed can score below it).
TestSkill = Literal["seed", "best", "final", "none"]
TEST_SKILLS: tuple[TestSkill, ...] = ("seed", "best", "final", "none")

# Why a set of rollouts was run (the rollouts.purpose column): a step's train batch, the
# incumbent and the candidate of each gating stage (a step's gate, a worked-examples trial's
# gate, the slow update's gate),
# the slow update's comparison of the epoch's start and end skills, the final tests, and the
# minibatch check's candidate and leave-one-out variants on the step's train items.
Purpose = Literal["train", "gate_current", "gate_candidate", "examples_current", "examples_candidate",
                  "slow_update_current", "slow_update_candidate",
                  "slow_prev", "slow_cur", "test_seed", "test_best", "test_final", "test_none",
                  "baseline", "check", "check_leave_one_out"]

# A sweep (grid search) and its trials. A trial ends with its run's final status, or
# "skipped" when the sweep's budget ran out before it could start. Resume runs again every
# trial that is not done; a failed trial stays failed (its reason is shown) and does not stop
# the others. "budget_exhausted" on a sweep: some trials were skipped for want of budget.
SweepStatus = Literal["pending", "running", "stopping", "completed", "stopped", "budget_exhausted"]
SWEEP_LIVE: tuple[SweepStatus, ...] = ("pending", "running", "stopping")
SWEEP_STATUSES: tuple[SweepStatus, ...] = ("pending", "running", "stopping", "completed", "stopped",
                                           "budget_exhausted")
TrialStatus = Literal["pending", "running", "completed", "incomplete", "stopped", "failed", "budget_exhausted",
                      "skipped"]
TRIAL_STATUSES: tuple[TrialStatus, ...] = ("pending", "running", "completed", "incomplete", "stopped", "failed",
                                           "budget_exhausted", "skipped")
TRIAL_DONE: tuple[TrialStatus, ...] = ("completed", "failed", "budget_exhausted", "skipped")
# Where a sweep's trials run: processes on this machine, or Ray tasks on a Ray cluster.
Backend = Literal["local", "ray"]
BACKENDS: tuple[Backend, ...] = ("local", "ray")
