"""A grown skill's reflection prompt on the embedded optimizer: sent whole vs fitted to its window.

    python bench/window.py [--task invoice-extraction] [--no-save]

A skill grows as a run learns: worked examples are whole task texts. A full invoice-extraction
learning run failed at its sixth step on an optimizer prompt of 4126 tokens against the
embedded model's 4096. This bench builds the skill such a run reaches, by a rule fixed in
advance: the task's seed skill, its reply template, and a full "Worked examples" section
(examples.MAX_EXAMPLES lines from the first train items, in order). It rolls the embedded
target out with that skill on the next minibatch_size train items, then asks the embedded
optimizer to reflect on those trajectories twice, through `skillopt.reflect.reflect`:

- reference: the whole prompt, as it was always sent before the prompt was fitted (the
  optimizer is told no window, so nothing is cut);
- fitted: the default path, the prompt fitted to the optimizer's window (skillopt/window.py).

Temperature 0, response cache off. Reported per arm: each prompt sent, with its tokens, the
tokens the window left for the reply, its error and what it left out; usable replies and
edits proposed. The reference's first call is what the code before the fit sent, and its
outcome was the minibatch's; when it is refused, the fit's fallback then sends the next
smaller shape, which is reported too. The last line is one JSON object, saved to
bench/results/window.json.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchkit import finish  # noqa: E402  (bench/ is the script's folder, first on sys.path)
from skillopt import examples, template  # noqa: E402
from skillopt.config import RunConfig  # noqa: E402
from skillopt.models import local  # noqa: E402
from skillopt.models.llm import LLM  # noqa: E402
from skillopt.models.providers import GenSettings  # noqa: E402
from skillopt.reflect import StepBuffer, common_lines, reflect  # noqa: E402
from skillopt.tasks.loader import load_task  # noqa: E402
from tests.models.fakes import MemorySink  # noqa: E402  (a call sink keeping each record, no cache)

MODEL = "local/qwen2.5-coder-1.5b"


class Optimizer(LLM):
    """The embedded optimizer, keeping every prompt it is sent; `fitted=False` tells the
    reflection no window, so its first prompt is the whole one."""

    def __init__(self, fitted: bool, settings: GenSettings):
        super().__init__(MODEL, "optimizer", settings, use_cache=False, sink=MemorySink())
        self.fitted, self.sent = fitted, []

    def prompt_room(self) -> int | None:
        return super().prompt_room() if self.fitted else None

    def complete_json(self, messages, **kwargs):
        self.sent.append(messages)
        return super().complete_json(messages, **kwargs)


def grown_skill(task) -> str:
    """The seed, the reply template and a full worked-examples section (first train items)."""
    skill = task.seed_skill
    found = template.for_skill(skill, task.reply_layout, 0.9) if task.reply_layout else None
    skill = found[2] if found else skill
    items = task.split("train")[:examples.MAX_EXAMPLES]
    trajs = [task.rollout(item, skill, lambda messages: "") for item in items]  # prompts and answers only
    lines = "\n".join(examples.line(t, common_lines([t.prompt for t in trajs])) for t in trajs)
    return f"{skill.rstrip()}\n\n## {examples.SECTION}\n\n{lines}\n"


def per_prompt(records) -> list[list]:
    """The call records of each prompt sent: one, or two when its reply was repaired (the
    first record's note then says "(repair asked)" and the repair's record follows it)."""
    groups, i = [], 0
    while i < len(records):
        repaired = "(repair asked)" in records[i].note and i + 1 < len(records)
        groups.append(records[i:i + 1 + repaired])
        i += 1 + repaired
    return groups


def arm(name: str, optimizer: Optimizer, skill: str, trajs, config: RunConfig, scoring) -> dict:
    start = time.perf_counter()
    results = reflect(optimizer, skill, trajs, budget=2, buffer=StepBuffer(), meta_skill="", config=config,
                      step=1, seed=0, scoring=scoring)
    calls = [{"prompt_tokens": optimizer.prompt_tokens(m), "reply_room": local.N_CTX - optimizer.prompt_tokens(m),
              "error": group[-1].error[:160], "note": "; ".join(r.note for r in group if r.note)[:300],
              "repaired": len(group) > 1} for m, group in zip(optimizer.sent, per_prompt(optimizer.sink.records))]
    row = {"arm": name, "minibatches": len(results), "usable": sum(r.ok for r in results),
           "edits": sum(len(r.edits) for r in results), "calls": calls,
           "errors": [r.error[:160] for r in results if not r.ok], "wall_s": round(time.perf_counter() - start, 1)}
    print(f"{name}: {row['usable']}/{row['minibatches']} usable replies, {row['edits']} edits, {row['wall_s']} s; "
          f"calls: {calls}", flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="invoice-extraction")
    ap.add_argument("--no-save", action="store_true", help="leave bench/results/window.json as it is")
    args = ap.parse_args()
    problem = local.preflight(MODEL.split("/", 1)[1])
    if problem:
        raise SystemExit(problem)
    task = load_task(args.task)
    config = RunConfig(target_model=MODEL, optimizer_model=MODEL, failure_only=True)
    settings = GenSettings(temperature=0.0, max_tokens=config.max_tokens, max_retries=config.max_retries)
    skill = grown_skill(task)
    target = LLM(MODEL, "target", settings, use_cache=False)
    items = task.split("train")[examples.MAX_EXAMPLES:examples.MAX_EXAMPLES + config.minibatch_size]
    trajs = [task.rollout(item, skill, lambda m: target.complete(m, stage="rollout", step=1)) for item in items]
    failures = sum(t.evaluation.hard < 1 for t in trajs if not t.error)
    reference, fitted = Optimizer(False, settings), Optimizer(True, settings)
    skill_tokens = reference.prompt_tokens([{"role": "system", "content": skill}])
    print(f"{args.task}: grown skill {len(skill)} chars ({skill_tokens} tokens), {failures} of {len(trajs)} "
          f"rollouts failed; a prompt may take {fitted.prompt_room()} tokens", flush=True)
    rows = [arm("reference (whole prompt)", reference, skill, trajs, config, task.scoring()),
            arm("fitted", fitted, skill, trajs, config, task.scoring())]
    figures = {"task": args.task, "model": MODEL, "skill_chars": len(skill), "skill_tokens": skill_tokens,
               "room": fitted.prompt_room(), "rollouts": len(trajs), "failures": failures, "arms": rows}
    finish("window", figures, save=not args.no_save)


if __name__ == "__main__":
    main()
