"""The `sweep` subcommands' arguments (light: the command line builds them for every command,
so nothing heavy is imported here; the actions live in commands.py)."""
from __future__ import annotations

import argparse

from ..vocabulary import BACKENDS

API_WORKERS = 4  # trials at once on remote APIs (or simulated models): they wait, they do not compute


def add_arguments(sp: argparse.ArgumentParser) -> None:
    sub = sp.add_subparsers(dest="sweep_action", required=True, metavar="{start,resume,stop,show,list}")

    def action(name: str, help_: str | None) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_) if help_ else sub.add_parser(name)
        # SUPPRESS: a --db given before the action (sweep --db X start) is not reset here.
        p.add_argument("--db", default=argparse.SUPPRESS, help="SQLite store (default $SKILLOPT_DB)")
        return p

    p = action("start", "start a grid search; each trial is an ordinary run")
    p.add_argument("--task", required=True, help="built-in task name or task folder")
    p.add_argument("--grid", action="append", metavar="KEY=V1,V2", help="a grid axis: any config key")
    p.add_argument("--config", help="TOML or YAML config file; its [grid] table holds axes too")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="a setting of every trial")
    p.add_argument("--seeds", type=int, default=1, help="runs per grid point, with seeds seed, seed+1, ...")
    p.add_argument("--name", help="sweep name shown in the dashboard")
    p.add_argument("--seed-skill", help="seed skill file for every trial (e.g. a best skill of an earlier run)")
    p.add_argument("--sweep-id", help="use this sweep id (the dashboard passes one)")
    add_control(p)
    p = action("resume", "continue a stopped or killed sweep: finished trials are kept")
    p.add_argument("sweep_id")
    add_control(p, resume=True)
    p = action("stop", "stop every trial of a sweep cooperatively (resumable)")
    p.add_argument("sweep_id")
    p.add_argument("--grace", type=float, default=0.0, metavar="SECONDS",
                   help="then SIGTERM local trial processes that have not stopped (same host, pid and start time)")
    p = action("show", "print a sweep's trials and its grid cells (mean ± sd over seeds)")
    p.add_argument("sweep_id")
    p.add_argument("--json", action="store_true")
    action("list", "list sweeps")
    p = action("trial", None)  # one trial process of the local backend (started by the controller)
    p.add_argument("sweep_id")
    p.add_argument("idx", type=int)
    p.add_argument("--attempt", type=int, required=True)


def add_control(p: argparse.ArgumentParser, resume: bool = False) -> None:
    p.add_argument("--workers", type=int, help="trials at once (default: 1 on the embedded model, else "
                                               f"{API_WORKERS})")
    if not resume:
        p.add_argument("--backend", choices=BACKENDS, default="local")
    p.add_argument("--ray-address", default=None, help="an existing Ray cluster (default: a local instance on "
                                                       "127.0.0.1)")
    p.add_argument("--max-calls", type=int, default=None, help="model calls for the whole sweep (0 = no limit)")
    p.add_argument("--max-cost-usd", type=float, default=None, help="cost for the whole sweep (0 = no limit)")
