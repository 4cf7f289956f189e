"""Test harness: run (or resume) a simulated training run and SIGKILL it at a chosen point.

usage: python tests/killer.py DB RUN_ID KILL_AT [start|resume] [key=value ...]
KILL_AT counts model calls (cached or not) made by this process; 0 = never kill.
Killing from inside at an exact call makes the kill points reproducible, unlike timers.
"""
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from skillopt import llm, runner  # noqa: E402
from skillopt.config import load_config  # noqa: E402
from skillopt.store import Store  # noqa: E402


def main() -> None:
    db, run_id, kill_at, mode, *overrides = sys.argv[1:]
    kill_at = int(kill_at)
    calls = [0]
    original = llm.LLM._complete

    def counting(self, *args, **kwargs):
        calls[0] += 1
        if kill_at and calls[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(self, *args, **kwargs)

    llm.LLM._complete = counting
    store = Store(db)
    if mode == "start":
        config = load_config(None, ["target_model=sim/target", "optimizer_model=sim/optimizer", *overrides])
        runner.start(store, "sim-rulebook", config, run_id=run_id)
    else:
        runner.resume(store, run_id)


if __name__ == "__main__":
    main()
