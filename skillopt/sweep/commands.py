"""`python -m skillopt sweep start|resume|stop|show|list`: arguments and actions.

    sweep start --task T --grid learning_rate=2,4,8,16 --grid lr_scheduler=cosine,linear [--seeds 3]
                [--set key=value ...] [--config FILE] [--workers N] [--backend local|ray]
                [--ray-address ADDR] [--max-calls N] [--max-cost-usd X] [--name NAME]

Everything is checked before the sweep is stored (every trial's config, the task, the models),
so a refused sweep leaves nothing behind. The controller runs in the foreground and prints a
line per finished trial; Ctrl-C stops the trials cooperatively and `sweep resume` continues.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Callable

from .. import runner
from ..config import load_mapping, parse_override, read_file
from ..errors import UserError
from ..launcher import new_run_id
from ..skill import validate as validate_skill
from ..store.reader import Reader
from ..store.writer import Store
from ..vocabulary import SWEEP_LIVE
from . import controller, grid, ledger, procs, summary, trial
from .arguments import API_WORKERS

EMBEDDED_NOTE = ("trials use the embedded model (local/...): one at a time by default, since llama.cpp already "
                 "uses every core of this machine; --workers N runs N at once, each slower")
SWEEP_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,80}$")


def run(args: argparse.Namespace, progress: Callable[[], Any] | None = None) -> int:
    db = getattr(args, "db", None)
    actions = {"start": start, "resume": resume, "stop": stop, "show": show, "list": list_sweeps}
    if args.sweep_action == "trial":
        return run_trial(args, db, progress)
    return actions[args.sweep_action](args, db)


# ---- start ------------------------------------------------------------------------------------

def plan(args: argparse.Namespace) -> dict[str, Any]:
    """Everything a sweep needs, checked; raises UserError with one line. Nothing is stored."""
    values = read_file(args.config) if args.config else {}
    table = values.pop(grid.GRID_TABLE, None)
    file_axes = grid.axes_from_file(table, args.config) if table is not None else []
    axes = grid.merge_axes(file_axes, [grid.parse_axis(g) for g in args.grid or []])
    base = dict(values)
    for item in args.set or []:
        key, value = parse_override(item)
        base[key] = value
    load_mapping(base, origin=args.config or "--set")
    trials = grid.trials(axes, grid.seeds_for(base, args.seeds, axes))
    configs = [grid.trial_config(base, t) for t in trials]
    if any(c.approval_mode for c in configs):
        raise UserError("approval_mode needs a person at every step; a sweep runs unattended")
    seed_skill = _seed_skill(args.seed_skill)
    task = runner.prepare(args.task, configs[0], seed_skill)
    for config in {c.to_json(): c for c in configs}.values():
        runner.prepare(task, config)
    embedded = any(m.startswith("local/") for c in configs for m in (c.target_model, c.optimizer_model, c.judge))
    workers = args.workers or (1 if embedded else min(API_WORKERS, len(trials)))
    if workers < 1:
        raise UserError(f"--workers must be at least 1, got {workers}")
    return {"axes": axes, "base": base, "trials": trials, "task": task, "seed_skill": seed_skill,
            "workers": workers, "embedded": embedded}


def _seed_skill(path: str | None) -> str | None:
    """The seed skill file's text, checked like `train --seed-skill` checks it."""
    if not path:
        return None
    p = Path(path)
    if not p.is_file():
        raise UserError(f"{path}: seed skill file not found")
    if p.stat().st_size > 1_000_000:
        raise UserError(f"{path}: seed skill file is over 1 MB")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{path}: seed skill file is not UTF-8 text") from None
    validate_skill(text, origin=path)
    return text


def start(args: argparse.Namespace, db: str | None) -> int:
    p = plan(args)
    sweep_id = args.sweep_id or f"sweep-{new_run_id()}"
    if not SWEEP_ID.match(sweep_id):
        raise UserError(f"sweep id {sweep_id!r} may hold letters, digits, '.', '_' and '-' only")
    store = Store(db)
    ledger.create(store, sweep_id=sweep_id, name=args.name or f"{p['task'].name} sweep {sweep_id[-6:]}",
                  task=p["task"].name, task_path=str(p["task"].path), seed_skill=p["seed_skill"], axes=p["axes"],
                  base=p["base"], seeds=args.seeds, backend=args.backend, workers=p["workers"],
                  ray_address=args.ray_address or "", max_calls=args.max_calls or 0,
                  max_cost_usd=args.max_cost_usd or 0.0, trials=p["trials"])
    print(f"sweep id: {sweep_id} ({len(p['trials'])} trials, {args.backend} backend, {p['workers']} at once)",
          flush=True)
    if p["embedded"] and not args.workers:
        print(f"note: {EMBEDDED_NOTE}", flush=True)
    return control(store, sweep_id)


def control(store: Store, sweep_id: str) -> int:
    sweep = ledger.get(store, sweep_id)
    if sweep["backend"] == "ray":
        from .ray_backend import RayBackend

        backend: controller.Backend = RayBackend(sweep["ray_address"] or "")
    else:
        from .local import LocalBackend

        backend = LocalBackend(store.path)
    try:
        status = controller.Controller(store, sweep_id, backend, report=lambda line: print(line, flush=True)).run()
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM: the trials were asked to stop
        print(f"\ninterrupted; resume with: python -m skillopt sweep resume {sweep_id}", file=sys.stderr)
        return 130
    failed = any(t["status"] != "completed" for t in ledger.trials(store, sweep_id))
    print(f"see: python -m skillopt sweep show {sweep_id}  (dashboard: Sweeps page, ?sweep={sweep_id})")
    return 0 if status == "completed" and not failed else 3


# ---- resume, stop ------------------------------------------------------------------------------

def resume(args: argparse.Namespace, db: str | None) -> int:
    store = Store(db)
    sweep = _sweep(store, args.sweep_id)
    if sweep["status"] == "completed" and args.max_calls is None and args.max_cost_usd is None:
        raise UserError(f"sweep {args.sweep_id} is already completed")
    changes = {k: v for k, v in (("workers", args.workers), ("max_calls", args.max_calls),
                                 ("max_cost_usd", args.max_cost_usd)) if v is not None}
    if changes:
        ledger.update_sweep(store, args.sweep_id, **changes)
    if args.ray_address is not None:
        with store.tx() as c:
            c.execute("UPDATE sweeps SET ray_address = ? WHERE id = ?", (args.ray_address, args.sweep_id))
    return control(store, args.sweep_id)


def stop(args: argparse.Namespace, db: str | None) -> int:
    store = Store(db)
    try:
        for line in stop_sweep(store, args.sweep_id, args.grace):
            print(line)
    finally:
        store.close()
    return 0


def stop_sweep(store: Store, sweep_id: str, grace_s: float = 0.0) -> list[str]:
    """Stop every trial through the run stop mechanism (the CLI's `sweep stop`, the page's Stop)."""
    from .. import launcher

    sweep = _sweep(store, sweep_id)
    ledger.request_stop(store, sweep_id)
    grace = grace_s if sweep["backend"] == "local" else 0.0  # a Ray worker is Ray's to end, never ours
    lines = [f"trial {t['idx']} ({t['run_id']}): {launcher.stop(t['run_id'], db=store.path, grace_s=grace)}"
             for t in ledger.trials(store, sweep_id)
             if t["status"] == "running" and store.run(t["run_id"]) is not None]
    if sweep["status"] in SWEEP_LIVE and not procs.alive(sweep) and not procs.elsewhere(sweep):
        # No controller runs to see the request: the sweep is stopped now (resume continues it).
        ledger.update_sweep(store, sweep_id, status="stopped", reason="stopped while no controller ran")
    return lines + [f"stop requested for sweep {sweep_id}"]


def _sweep(store: Store, sweep_id: str) -> dict[str, Any]:
    sweep = ledger.get(store, sweep_id)
    if sweep is None:
        raise UserError(f"no sweep {sweep_id} in {store.path}")
    return sweep


# ---- show, list ----------------------------------------------------------------------------------

def show(args: argparse.Namespace, db: str | None) -> int:
    reader = Reader(db)
    sweep = reader.sweep(args.sweep_id)
    if sweep is None:
        raise UserError(f"no sweep {args.sweep_id} in {reader.path}")
    trials = reader.sweep_trials(args.sweep_id)
    x, y = summary.heatmap_axes([k for k, _ in sweep["grid"]])
    cells = summary.cells(trials, x, y)
    if args.json:
        print(json.dumps({"sweep": sweep, "trials": trials, "cells": [cell_json(c, x, y) for c in cells]},
                         indent=2, default=str))
        return 0
    print(f"sweep {sweep['id']}  {sweep['name']}  status={sweep['status']} {sweep['reason']}")
    print(f"task {sweep['task']}  backend {sweep['backend']}  workers {sweep['workers']}  "
          f"budget {sweep['max_calls'] or 'unlimited'} calls, ${sweep['max_cost_usd'] or 0:g}")
    for t in trials:
        best = "" if t["best_score"] is None else f"{t['best_score']:.3f}"
        test = "" if t["best_test"] is None else f"{t['best_test']:.3f}"
        print(f"  {t['idx']:>3} {grid.label(ledger.as_trial(t)):<36} {t['status']:<16} "
              f"step {t['step'] or 0}/{t['total_steps'] or 0:<4} best {best:>6} test {test:>6} "
              f"calls {t['calls']:>6} {t['run_id']}{'  — ' + t['reason'] if t['reason'] else ''}")
    print(f"cells ({x or '-'} × {y or '-'}): best selection and test score, mean ± sd over seeds")
    for c in cells:
        print(f"  {x}={c.x} {y}={c.y}: selection {summary.fmt(*c.selection_mean_sd)}  "
              f"test {summary.fmt(*c.test_mean_sd)}  ({c.finished}/{c.trials} trials, {c.calls} calls, "
              f"${c.cost_usd:.4f})")
    return 0


def cell_json(c: summary.Cell, x: str | None, y: str | None) -> dict[str, Any]:
    (sm, ss), (tm, ts) = c.selection_mean_sd, c.test_mean_sd
    return {x or "x": c.x, y or "y": c.y, "trials": c.trials, "finished": c.finished, "selection_mean": sm,
            "selection_sd": ss, "test_mean": tm, "test_sd": ts, "calls": c.calls, "cost_usd": c.cost_usd,
            "run_ids": c.run_ids}


def list_sweeps(args: argparse.Namespace, db: str | None) -> int:
    print(f"{'id':<36} {'status':<17} {'task':<20} {'trials':>9} {'backend':<7} name")
    for s in Reader(db).sweeps():
        print(f"{s['id']:<36} {s['status']:<17} {s['task']:<20} {s['n_done'] or 0:>4}/{s['n_trials']:<4} "
              f"{s['backend']:<7} {s['name']}")
    return 0


# ---- one trial process -------------------------------------------------------------------------

def run_trial(args: argparse.Namespace, db: str | None, progress: Callable[[], Any] | None) -> int:
    store = Store(db)
    if not controller.claim(store, args.sweep_id, args.idx, args.attempt, procs.me()):
        print(f"trial {args.idx} of sweep {args.sweep_id}: launch {args.attempt} is no longer current; exiting",
              file=sys.stderr)
        return 0
    status = trial.run_local(store, args.sweep_id, args.idx, callbacks=(progress(),) if progress else ())
    print(f"trial {args.idx}: {status}")
    return 0
