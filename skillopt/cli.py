"""The command line: python -m skillopt COMMAND ...

User errors print one line ("error: ...") and exit 2; no traceback.
"""
from __future__ import annotations

import argparse
import os
import json
import signal
import sys
from pathlib import Path

from . import events as ev
from .errors import UserError


class Progress:
    """A one-line progress bar on stderr, redrawn as the trainer emits events."""

    def __init__(self, stream=sys.stderr):
        self.stream, self.total, self.step, self.last = stream, 0, 0, ""
        self.tty = stream.isatty()

    def __call__(self, e: ev.Event) -> None:
        if isinstance(e, ev.RunStarted):
            self.total = e.total_steps
            if not e.resumed:
                self.stream.write(f"run id: {e.run_id}\n")
            self.stream.write(f"dashboard: python -m skillopt dashboard, then open ?run={e.run_id}\n")
        elif isinstance(e, ev.StageChanged):
            self.draw(f"{e.stage} {e.detail}".strip(), final=False)
        elif isinstance(e, ev.StepCompleted):
            self.step = e.step
            score = e.state.current_score or 0.0
            tried = f" (worked examples: {e.examples.decision})" if e.examples else ""
            self.draw(f"{e.decision:<15} selection {score:.3f} best {e.state.best_score or 0:.3f}{tried}", final=True)
        elif isinstance(e, ev.TestEvaluated):
            self.draw(f"test {e.which}: {e.score:.3f}", final=True)
        elif isinstance(e, ev.RunFinished):
            self.stream.write(f"\nrun {e.run_id} {e.status}{': ' + e.reason if e.reason else ''}\n")
            self.stream.flush()

    def draw(self, text: str, final: bool) -> None:
        width = 24
        done = int(width * self.step / self.total) if self.total else 0
        line = f"[{'#' * done}{'-' * (width - done)}] step {self.step}/{self.total} {text}"
        if self.tty:
            self.stream.write("\r" + line[:110].ljust(110))
            if final:
                self.stream.write("\n")
        elif final:
            self.stream.write(line + "\n")
        self.stream.flush()


def _store(args):
    from .store.writer import Store

    return Store(args.db)


def cmd_tasks(args) -> int:
    from .tasks.loader import list_tasks

    for t in list_tasks():
        print(f"{t.name:<22} {t.description}  [{t.path}]")
    return 0


def cmd_dashboard(args) -> int:
    from . import dashboard

    if args.db:  # the pages read the store from the environment, as the runs they start do
        os.environ["SKILLOPT_DB"] = str(Path(args.db).resolve())
    return dashboard.main(args.streamlit)


def cmd_validate_task(args) -> int:
    from .tasks.loader import validate_task

    problems = validate_task(args.path)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s) in {args.path}", file=sys.stderr)
        return 1
    print(f"{args.path}: ok")
    return 0


def _config(args):
    from .config import load_config

    return load_config(args.config, args.set or [])


def cmd_train(args) -> int:
    config = _config(args)
    seed_skill = None
    if args.seed_skill:
        seed_skill = _read_text(args.seed_skill, "seed skill")
        from .skill import validate

        validate(seed_skill, origin=args.seed_skill)  # the error names the file the user gave
    from . import runner  # after the cheap checks: a typo in a config fails in a blink

    task = runner.prepare(args.task, config, seed_skill)  # refused runs never open the store
    store = _store(args)
    run_id, status = runner.start(store, task, config, name=args.name or "", run_id=args.run_id,
                                  callbacks=(Progress(),))
    print(f"run id: {run_id} ({status})")
    return 0 if status == "completed" else 3


def cmd_resume(args) -> int:
    from . import runner

    store = _store(args)
    status = runner.resume(store, args.run_id, callbacks=(Progress(),))
    return 0 if status == "completed" else 3


def cmd_stop(args) -> int:
    from . import launcher

    store = _store(args)
    if store.run(args.run_id) is None:
        raise UserError(f"no run {args.run_id} in {store.path}")
    # The dashboard's Stop: a cooperative request, then (--grace) SIGTERM only to a trainer
    # whose host, pid and start time all match (launcher.signal_run).
    print(f"{args.run_id}: {launcher.stop(args.run_id, db=store.path, grace_s=args.grace)}")
    return 0


def cmd_eval(args) -> int:
    from .config import load_config
    from .models.limits import Meter
    from .models.llm import build_models
    from .plan import Plan
    from .preflight import check_run
    from .rollout import Evaluator
    from .skill import validate
    from .tasks.loader import load_task

    config = load_config(args.config, args.set or [])
    task = load_task(args.task)
    skill = _read_text(args.skill, "skill") if args.skill else task.seed_skill
    validate(skill, origin=args.skill or "seed skill")
    check_run(task, config)  # before the store: a refused evaluation writes nothing
    store = _store(args)
    models = build_models(config, store, "", Meter(config.max_calls, config.max_cost_usd))
    evaluator = Evaluator.of(task, models, config, cache=store)
    items = {"test": Plan.make(task, config).test, "selection": Plan.make(task, config).selection,
             "train": Plan.make(task, config).train}[args.split]
    batch = evaluator.run(skill, items, step=0, split=args.split, purpose="eval", stage="test")
    print(json.dumps({"split": args.split, "items": len(items), "hard": round(batch.mean("hard"), 4),
                      "soft": round(batch.mean("soft"), 4), "errors": batch.n_errors}))
    return 0


def cmd_runs(args) -> int:
    from .store.reader import Reader

    rows = Reader(args.db).runs()
    print(f"{'id':<24} {'status':<17} {'task':<20} {'step':>9} {'best':>6} {'seed→best test':>15}")
    for r in rows:
        test = "" if r["best_test"] is None else f"{r['seed_test']:.3f}→{r['best_test']:.3f}"
        best = "" if r["best_score"] is None else f"{r['best_score']:.3f}"
        sim = " (simulated)" if r["simulated"] else ""
        print(f"{r['id']:<24} {r['status']:<17} {r['task']:<20} {r['step']:>4}/{r['total_steps']:<4} "
              f"{best:>6} {test:>15}{sim}")
    return 0


def cmd_show(args) -> int:
    from .lift import lift_summary
    from .store.export import run_document
    from .store.reader import Reader

    doc = run_document(Reader(args.db), args.run_id)
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    run = doc["run"]
    print(f"run {run['id']}  {run['name']}  status={run['status']} {run['reason']}")
    print(f"task {run['task']}{'  (SIMULATED models)' if run['simulated'] else ''}")
    for s in doc["steps"]:
        print(f"  step {s['step']:>3} epoch {s['epoch']} budget {s['edit_budget']} train {s['train_hard']:.3f}"
              f"{_ci(s, 'train_interval')} selection {s['selection_score'] or 0:.3f}{_ci(s, 'selection_interval')} "
              f"candidate {s['candidate_score'] or 0:.3f}{_ci(s, 'candidate_interval')} "
              f"{s['decision']} ({s['n_applied']}/{s['n_proposed']} edits applied)")
    metric = run["config"].get("gate_metric", "hard")
    print(f"test{'' if metric == 'hard' else f' ({metric})'}: " + ", ".join(_test_line(w, doc) for w in doc["test"]))
    if metric != "hard":  # scores with partial credit: the share of items wholly right beside them
        print("test hard: " + ", ".join(f"{w} {doc['test_items'][w]['hard']:.3f}" for w in doc["test"]
                                        if doc["test_items"].get(w)))
    if doc["lift"]:
        print(lift_summary(doc["lift"]))
    print(f"usage: {doc['usage']}")
    return 0


def _ci(row: dict, key: str) -> str:
    """ " [lo-hi]": a score's 95% sampling interval (samples_per_item > 1), or nothing."""
    return f" [{row[key][0]:.3f}-{row[key][1]:.3f}]" if row.get(key) else ""


def _test_line(which: str, doc: dict) -> str:
    score, items = doc["test"][which], doc["test_items"].get(which)
    if score is None or items is None:
        return f"{which} -"
    if not items["n_errors"]:
        return f"{which} {score:.3f}{_ci(items, 'interval')}"
    missing = f"{items['n_errors']} of {items['n_items']} items errored"
    return f"{which} {score:.3f}{_ci(items, 'interval')} ({missing}{', INCOMPLETE' if not items['complete'] else ''})"


def cmd_export(args) -> int:
    from .store.export import export_run
    from .store.reader import Reader

    if not (args.out or args.bundle or args.mlflow):
        raise UserError("export needs --out DIR, --bundle FILE or --mlflow")
    if args.mlflow:
        _export_mlflow(args)
    if args.bundle:  # the run's rows in one file, for `import` on another machine
        from .sweep.bundle import export_bundle

        print(export_bundle(Reader(args.db).conn, args.run_id, args.bundle))
    for path in export_run(Reader(args.db), args.run_id, args.out) if args.out else ():
        print(path)
    return 0


def _export_mlflow(args) -> None:
    """Log the run to MLflow (or bring its MLflow run up to date) and register its best skill."""
    from .integrations.mlflow_sink import export_mlflow

    done = export_mlflow(_store(args), args.run_id, args.tracking_uri or "", args.experiment or "",
                         args.prompt_name or "")
    print(f"mlflow run {done['mlflow_run_id']} in experiment {done['experiment']!r}: "
          f"{len(done['steps_logged'])} step(s) logged; prompt version {done['prompt_version'] or '-'}")


def cmd_check(args) -> int:
    from . import check

    return check.command(args, _read_text, lambda: _store(args))


def cmd_import(args) -> int:
    from .sweep.bundle import import_bundle, read_file

    run_id, left_out = import_bundle(_store(args), read_file(args.file), origin=args.file, replace=args.replace)
    print(f"imported run {run_id}" + (f" (not in this store's schema, left out: {', '.join(left_out)})"
                                      if left_out else ""))
    return 0


def cmd_sweep(args) -> int:
    from .sweep import commands

    return commands.run(args, progress=Progress)


def cmd_approve(args) -> int:
    from .ui.labels import approval_edit_number

    store = _store(args)
    status = "rejected" if args.reject else "approved"
    # The numbers the dashboard shows ("edit N", counted from 1 within the step), not row indexes.
    shown = {approval_edit_number(r, json.loads(r["edit_json"])): r["idx"]
             for r in store.approvals(args.run_id, args.step)}
    if not shown:
        raise UserError(f"run {args.run_id} has no edits of step {args.step} for approval")
    unknown = [n for n in args.idx if n not in shown]
    if unknown:
        raise UserError(f"step {args.step} has no edit {unknown[0]} for approval (its edits: "
                        f"{', '.join(map(str, sorted(shown)))})")
    for number in args.idx:
        store.decide(args.run_id, args.step, shown[number], status)
    print(f"{status} {len(args.idx)} edit(s) of step {args.step}")
    return 0


def _read_text(path: str, what: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise UserError(f"{path}: {what} file not found")
    data = p.read_bytes()
    if len(data) > 1_000_000:
        raise UserError(f"{path}: {what} file is over 1 MB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{path}: {what} file is not UTF-8 text") from None


def _add_bundle_and_sweep(add, export: argparse.ArgumentParser) -> None:
    """`export --bundle`, `import` and `sweep` (its actions' arguments live in sweep/arguments.py)."""
    from .sweep.arguments import add_arguments as add_sweep_arguments

    export.add_argument("--out", help="folder for best_skill.md, steps.csv and run.json")
    export.add_argument("--bundle", metavar="FILE", help="every row of the run in one file, for `import`")
    sp = add("import", cmd_import, "import a run bundle written by `export --bundle`")
    sp.add_argument("file")
    sp.add_argument("--replace", action="store_true", help="overwrite a run with the same id")
    add_sweep_arguments(add("sweep", cmd_sweep, "grid search over config keys: start, resume, stop, show, list"))


def _add_tasks_and_dashboard(add) -> None:
    add("tasks", cmd_tasks, "list built-in and local tasks")
    add("validate-task", cmd_validate_task, "check a task folder and list every problem").add_argument("path")
    # Options other than --db are streamlit run's: main passes them on (e.g. --server.port 8502).
    add("dashboard", cmd_dashboard, "start the dashboard: streamlit run app.py, the pages' libraries loaded first")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m skillopt", description="Train LLM agent skill documents.")
    sub = p.add_subparsers(dest="command", required=True)

    def add(name, fn, help_):
        sp = sub.add_parser(name, help=help_)
        sp.add_argument("--db", default=None, help="SQLite store (default $SKILLOPT_DB or data/runs/skillopt.db)")
        sp.set_defaults(fn=fn)
        return sp

    _add_tasks_and_dashboard(add)
    for name, fn in (("train", cmd_train), ("eval", cmd_eval)):
        sp = add(name, fn, "train a skill" if name == "train" else "evaluate a skill on a split")
        sp.add_argument("--task", required=True, help="built-in task name or task folder")
        sp.add_argument("--config", help="TOML or YAML config file")
        sp.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config key")
        if name == "train":
            sp.add_argument("--name", help="run name shown in the dashboard")
            sp.add_argument("--run-id", help="use this run id (the dashboard passes one)")
            sp.add_argument("--seed-skill", help="seed skill file instead of the task's seed_skill.md")
        else:
            sp.add_argument("--skill", help="skill file (default: the task's seed skill)")
            sp.add_argument("--split", default="test", choices=("train", "selection", "test"))
    for name, fn, help_ in (("resume", cmd_resume, "continue an interrupted run"),
                            ("stop", cmd_stop, "ask a running run to stop after its current stage"),
                            ("show", cmd_show, "print a run's steps, tests and usage")):
        sp = add(name, fn, help_)
        sp.add_argument("run_id")
        if name == "show":
            sp.add_argument("--json", action="store_true")
        if name == "stop":
            sp.add_argument("--grace", type=float, default=0.0, metavar="SECONDS",
                            help="SIGTERM the trainer if it has not stopped after SECONDS (same host, pid and "
                                 "process start time only)")
    add("runs", cmd_runs, "list runs")
    sp = add("export", cmd_export, "write best_skill.md, steps.csv and run.json (--out), or a bundle (--bundle)")
    sp.add_argument("run_id")
    _add_bundle_and_sweep(add, sp)
    sp.add_argument("--mlflow", action="store_true", help="log the run to MLflow and register its best skill")
    sp.add_argument("--tracking-uri", help="MLflow tracking URI (default: the run's mlflow_tracking_uri)")
    sp.add_argument("--experiment", help="MLflow experiment (default: the run's mlflow_experiment or skillopt/TASK)")
    sp.add_argument("--prompt-name", help="Prompt Registry name (default: skillopt-TASK)")
    sp = add("check", cmd_check, "regression check of a skill for CI: exit 1 if it regressed")
    sp.add_argument("--task", required=True, help="built-in task name or task folder")
    sp.add_argument("--skill", required=True, help="the skill file to check")
    sp.add_argument("--baseline", help="skill file to compare with (default: the task's seed skill)")
    sp.add_argument("--pinned", help="file of must-pass item ids, one a line (default: the task's pinned.txt)")
    sp.add_argument("--tolerance", type=float, help="allowed drop of the test score (default 0.02)")
    sp.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    sp.add_argument("--markdown", metavar="FILE", help="write a Markdown report for a pull-request comment")
    sp.add_argument("--config", help="TOML or YAML config file (models, metric)")
    sp.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config key")
    sp = add("approve", cmd_approve, "approve (or --reject) pending edits of a step")
    sp.add_argument("run_id")
    sp.add_argument("step", type=int)
    sp.add_argument("idx", type=int, nargs="+", metavar="edit", help="edit numbers as the dashboard shows them")
    sp.add_argument("--reject", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args, extra = p.parse_known_args(argv)
    if extra and args.command != "dashboard":
        p.error(f"unrecognized arguments: {' '.join(extra)}")
    args.streamlit = extra
    # SIGTERM (the dashboard's fallback stop) becomes a clean KeyboardInterrupt-like exit.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        return args.fn(args)
    except UserError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted; resume with: python -m skillopt resume RUN_ID", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
