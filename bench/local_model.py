"""Rollouts per minute of the embedded model with and without KV prefix reuse.

    python bench/local_model.py [--items 8] [--skill trained|seed]

Runs ticket-routing items (the test split, in order) through LLM("local/qwen2.5-coder-1.5b")
-- the same path a training run takes: litellm custom provider, retries, accounting -- with
the response cache off, twice:

- uncached: SKILLOPT_LOCAL_PREFIX_CACHE=0, every call reads its whole prompt;
- cached:   prefix reuse on (default), starting cold, so the first item pays the skill once.

Reuse must not change a reply: the two modes' replies are compared, and one that differs is a miss.

The skill is, by default, a trained-size one: the task's seed skill plus house-rule
guidance of the length a few accepted steps add (the seed alone is ~150 tokens, shorter than
any skill a run keeps; `--skill seed` measures it too). Load time and per-call latency are
printed; the last line is one JSON object, also saved to bench/results/local_model.json.

Rule of every bench (bench/README.md): a reference arm emulates the published behaviour
(gate_mode=strict, use_cache=false), and in every arm a test evaluation of a skill text already
tested in the run is counted once. This bench times calls rather than counting them; its
baseline is the same calls with prefix reuse off.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchkit import finish  # noqa: E402  (bench/ is the script's folder, first on sys.path)
from skillopt.models import local  # noqa: E402
from skillopt.models.llm import LLM  # noqa: E402
from skillopt.models.providers import GenSettings  # noqa: E402
from skillopt.tasks.loader import load_task  # noqa: E402

MODEL = "local/qwen2.5-coder-1.5b"

# Guidance in the style the optimizer writes: the house rules a run discovers, each with
# the patterns and counter-examples that made it stick. About 700 tokens.
TRAINED_GUIDANCE = """
## House rules (learned; they override the topic)
1. Regulations first: any ticket that names a regulation or a data-protection law (GDPR,
   DSGVO, CCPA, PSD2, "data protection", "right to erasure", "data subject request") goes to
   legal, whatever else it asks for. Example: a refund request that cites PSD2 is legal.
2. Large refunds: a refund request above 500 EUR goes to escalations, whatever the product.
   Read the amount carefully: 500 EUR or less stays with the topic (a plain refund is billing);
   "499", "500", "350.00" are not above 500; "501", "650", "1,200" are.
3. Repeat contacts: a customer who writes again about an open case (quotes a ticket or case
   number such as "#T-4821" or "case 5521", says "third message", "following up", "still no
   answer", "I wrote last week") goes to escalations.
4. Sign-in problems: password resets, login failures, locked accounts and two-factor codes
   go to account, not technical, even when the app shows an error message.
5. Damaged in transit: a crushed box, a parcel that arrived broken or dented, or a device
   "broken on arrival" goes to shipping, even when the customer asks for a refund of 500 EUR
   or less. A device that broke after weeks of use is technical.

## How to decide
- First check rule 1, then rule 2, then rule 3, then rules 4 and 5; only then use the topic.
- Topic queues: billing for charges, invoices, payment methods and small refunds; technical
  for devices, the app, firmware, Wi-Fi and bugs; account for profile, email and settings;
  shipping for delivery dates, tracking and addresses.
- Ignore greetings, signatures and order numbers unless they are case numbers (rule 3).
- Do not explain. Output one word: the queue name in lower case.

## Common mistakes seen in training
- Sending "charged twice, please refund 640 EUR" to billing: it is escalations (rule 2).
- Sending "cannot log in after the update" to technical: it is account (rule 4).
- Sending "the box was crushed and the hub is cracked, refund 120 EUR" to billing: it is
  shipping (rule 5).
- Sending "under GDPR I want my data deleted" to account: it is legal (rule 1).
"""


def rollouts_per_minute(model: LLM, task, skill: str, items, *, reuse: bool) -> tuple[float, list[float], int, list[str]]:
    os.environ[local.PREFIX_CACHE_ENV] = "1" if reuse else "0"
    local.load(MODEL.split("/", 1)[1]).forget()  # start cold in both modes: the cached run pays its skill once
    latencies, correct, replies = [], 0, []
    start = time.perf_counter()
    for item in items:
        reply = model.complete(task.messages(skill, item), stage="rollout", step=0)
        if not reply.ok:
            raise SystemExit(f"model call failed: {reply.error}")
        latencies.append(reply.latency_s)
        replies.append(reply.text)
        correct += int(task.evaluate(item, reply.text).hard)
    elapsed = time.perf_counter() - start
    return len(items) * 60.0 / elapsed, latencies, correct, replies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=8, help="test items per mode (default 8)")
    parser.add_argument("--skill", choices=("trained", "seed"), default="trained")
    parser.add_argument("--no-save", action="store_true", help="do not overwrite bench/results/local_model.json")
    args = parser.parse_args()

    task = load_task("ticket-routing")
    skill = task.seed_skill if args.skill == "seed" else task.seed_skill.rstrip() + "\n" + TRAINED_GUIDANCE
    items = task.split("test")[: args.items]
    problem = local.preflight(MODEL.split("/", 1)[1])
    if problem:
        raise SystemExit(problem)

    t0 = time.perf_counter()
    local.load(MODEL.split("/", 1)[1])
    load_s = time.perf_counter() - t0
    model = LLM(MODEL, "target", GenSettings(max_tokens=8), use_cache=False)
    skill_tokens = len(local.load(MODEL.split("/", 1)[1]).llama.tokenize(skill.encode("utf-8")))
    print(f"model {MODEL}: loaded in {load_s:.1f} s (assembly included on a first run); "
          f"skill '{args.skill}' = {skill_tokens} tokens; {len(items)} items per mode; {os.cpu_count()} CPUs")

    uncached, lat_u, ok_u, text_u = rollouts_per_minute(model, task, skill, items, reuse=False)
    cached, lat_c, ok_c, text_c = rollouts_per_minute(model, task, skill, items, reuse=True)
    # Reuse must not change a reply (local.Engine._eval): the two modes' replies, compared.
    differ = sum(a != b for a, b in zip(text_u, text_c))
    warm = lat_c[1:] or lat_c
    print(f"uncached: {uncached:6.1f} rollouts/min, {sum(lat_u) / len(lat_u):.2f} s/call, {ok_u}/{len(items)} correct")
    print(f"cached:   {cached:6.1f} rollouts/min, first call {lat_c[0]:.2f} s, then {sum(warm) / len(warm):.2f} s/call, "
          f"{ok_c}/{len(items)} correct")
    speedup = cached / uncached
    print(f"speedup (cached / uncached): {speedup:.2f}x; replies that differ between the modes: {differ}/{len(items)}")
    finish("local_model", {"cached_per_min": round(cached, 2), "uncached_per_min": round(uncached, 2),
                           "speedup": round(speedup, 2), "load_s": round(load_s, 2), "skill_tokens": skill_tokens,
                           "items": len(items), "skill": args.skill, "replies_differ": differ,
                           "met": speedup >= 3 and differ == 0},
           save=not args.no_save)


if __name__ == "__main__":
    main()
