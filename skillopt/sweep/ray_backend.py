"""The Ray backend: each trial is a Ray task, on any node of a Ray cluster.

A worker node has no access to the head's disk. A trial therefore receives everything it needs
as Ray objects: the task folder's files (Python evaluators included, shipped once per sweep),
its config (model keys travel as the NAMES of environment variables, never their values: set
the variables on the worker nodes) and the skillopt package itself (Ray's py_modules). The
worker needs the same requirements installed; a trial on the embedded model (`local/...`) also
needs the model's packages there. The trial trains into a store on its own node (its
crash-safe buffer) and reports each finished unit of work (seed score, step, epoch end, test)
to the head through a small actor; the head records each report in the main store as it
arrives, and at the end imports the whole run as a bundle (bundle.py). A trial lost with its
node (or its worker process) is re-run from its start by Ray (NODE_RETRIES); the head drops
the lost attempt's rows when the new attempt reports first.

By default Ray stays on this machine: a new local instance bound to 127.0.0.1, no dashboard,
usage stats off. `--ray-address` points a sweep at an existing cluster instead.
"""
from __future__ import annotations

import logging
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any

from .. import events as ev
from ..config import load_mapping
from ..errors import UserError
from ..store.writer import Store, connect
from . import bundle
from .controller import Ended
from .trial import run_name, train_trial

LOOPBACK = "127.0.0.1"
OBJECT_STORE_BYTES = 128 * 2**20  # trial bundles and one task folder: small; Ray's minimum is 75 MiB
NODE_RETRIES = 2  # Ray re-runs a trial whose node or worker process died this often
API_TRIAL_CPUS = 0.25  # a trial on a remote API (or a simulated one) mostly waits on the network
EMBEDDED_TRIAL_CPUS = 1.0  # llama.cpp computes on the node's cores
PACKAGE_DIR = Path(__file__).resolve().parents[1]
MAX_TASK_BYTES = 256 * 2**20
REPORTED = tuple(getattr(ev, name) for name in ("RunStarted", "SeedScored", "StepCompleted", "EpochCompleted",
                                                   "TestEvaluated", "LiftMeasured", "RunFinished") if hasattr(ev, name))


def trial_cpus(config: dict[str, Any]) -> float:
    models = (config.get("target_model", ""), config.get("optimizer_model", ""), config.get("judge_model", ""))
    return EMBEDDED_TRIAL_CPUS if any(m.startswith("local/") for m in models) else API_TRIAL_CPUS


def start(address: str = "", *, num_cpus: int | None = None, object_store_bytes: int = OBJECT_STORE_BYTES) -> bool:
    """Connect to Ray; True when this call started it (and must shut it down).

    No address: a new local instance on 127.0.0.1 only. Ray resolves a loopback node address
    to the machine's outward address unless multi-machine clustering is off, so it is switched
    off for the local instance, and for a cluster at a loopback address (before Ray is imported:
    Ray reads it once); every Ray server then binds 127.0.0.1, which is checked here.
    """
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    if not address or address.split("://")[-1].split(":")[0] in ("127.0.0.1", "localhost"):
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    try:
        import ray
    except ImportError:
        raise UserError("the Ray backend needs ray (pip install -r requirements.txt)") from None
    if ray.is_initialized():
        return False
    runtime_env = {"py_modules": [str(PACKAGE_DIR)], "excludes": ["__pycache__", "*.pyc"]}
    common = dict(runtime_env=runtime_env, log_to_driver=False, logging_level=logging.WARNING)
    if address:
        ray.init(address=address, **common)
        return True
    ray.init(address="local", _node_ip_address=LOOPBACK, include_dashboard=False, num_cpus=num_cpus or os.cpu_count(),
             object_store_memory=object_store_bytes, **common)
    bound = {n["NodeManagerAddress"] for n in ray.nodes()}
    if bound != {LOOPBACK}:
        ray.shutdown()
        raise UserError(f"the local Ray instance bound {', '.join(sorted(bound))}, not {LOOPBACK} (was ray imported "
                        "before RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 was set?)")
    return True


# ---- the task folder, shipped as an object --------------------------------------------------

def pack(folder: str | os.PathLike) -> dict[str, Any]:
    root = Path(folder)
    files, total = {}, 0
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or "__pycache__" in rel.parts or any(p.startswith(".") for p in rel.parts):
            continue
        files[rel.as_posix()] = data = path.read_bytes()
        total += len(data)
        if total > MAX_TASK_BYTES:
            raise UserError(f"{root}: task folder is over {MAX_TASK_BYTES // 2**20} MB; too big to ship to Ray workers")
    return {"name": root.name, "files": files}


def unpack(packed: dict[str, Any], into: Path) -> Path:
    dest = (into / packed["name"]).resolve()
    for rel, data in packed["files"].items():
        target = (dest / rel).resolve()
        if not target.is_relative_to(dest):
            raise UserError(f"task file {rel!r} would land outside its folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return dest


# ---- on the worker --------------------------------------------------------------------------

class Hub:
    """The actor trials report to and read stop requests from (the head drains it)."""

    def __init__(self) -> None:
        self.inbox: list[dict] = []
        self.stops: set[str] = set()

    def put(self, message: dict) -> None:
        self.inbox.append(message)

    def drain(self) -> list[dict]:
        out, self.inbox = self.inbox, []
        return out

    def request_stop(self, run_id: str) -> None:
        self.stops.add(run_id)

    def stop_requested(self, run_id: str) -> bool:
        return run_id in self.stops


class Reporter:
    """A trainer callback on the worker: after each recorded unit of work, the rows it added
    (read from the node's store) go to the hub; before each stage, a stop requested at the
    head reaches the node's store, where the trainer honours it."""

    def __init__(self, store: Store, hub: Any, run_id: str, attempt: str):
        self.store, self.hub, self.run_id, self.attempt = store, hub, run_id, attempt
        self.conn = None
        self.since, self.after, self.items_sent = 0, {}, False

    def __call__(self, e: ev.Event) -> None:
        import ray
        from ray.exceptions import RayError

        if isinstance(e, ev.StageChanged):
            try:
                stop = ray.get(self.hub.stop_requested.remote(self.run_id), timeout=60)
            except RayError:  # the hub is restarting: ask again at the next stage
                stop = False
            if stop and not self.store.stop_requested(self.run_id):
                self.store.request_stop(self.run_id)
            return
        if not isinstance(e, REPORTED):
            return
        self.conn = self.conn or connect(self.store.path, readonly=True)
        tables, self.after = bundle.collect(self.conn, self.run_id, since_step=self.since, after=self.after,
                                            items=not self.items_sent)
        self.items_sent = True
        runs = tables["runs"]
        self.since = runs["rows"][0][runs["columns"].index("step")] or 0 if runs["rows"] else self.since
        self.hub.put.remote({"run_id": self.run_id, "attempt": self.attempt, "tables": tables})

    def close(self) -> None:
        import ray
        from ray.exceptions import RayError

        try:  # returns once every report before it reached the hub (an actor runs one caller's calls in order)
            ray.get(self.hub.put.remote({"run_id": self.run_id, "attempt": self.attempt, "tables": {}}), timeout=60)
        except RayError:
            pass  # the head imports the whole run from the returned bundle anyway
        if self.conn is not None:
            self.conn.close()


def train_remote(payload: dict[str, Any], task_files: dict[str, Any], hub: Any) -> bytes:
    """A trial as a Ray task: returns its run as a bundle."""
    attempt = uuid.uuid4().hex  # a re-run after a lost node reports under a new attempt
    with tempfile.TemporaryDirectory(prefix="skillopt-trial-") as tmp:
        folder = unpack(task_files, Path(tmp) / "task")
        store = Store(Path(tmp) / "trial.db")
        reporter = Reporter(store, hub, payload["run_id"], attempt)
        try:
            train_trial(store, run_id=payload["run_id"], task_ref=str(folder),
                        config=load_mapping(payload["config"], origin=f"trial {payload['run_id']}"),
                        name=payload["name"], seed_skill=payload["seed_skill"], callbacks=(reporter,))
        finally:
            store.close()
            reporter.close()
        conn = connect(Path(tmp) / "trial.db", readonly=True)
        try:
            return bundle.dumps(conn, payload["run_id"])
        finally:
            conn.close()


# ---- on the head ----------------------------------------------------------------------------

class RayBackend:
    name = "ray"

    def __init__(self, address: str = "", *, num_cpus: int | None = None):
        self.address, self.num_cpus = address, num_cpus
        self.started = False
        self.refs: dict[Any, dict] = {}
        self.attempts: dict[str, str] = {}  # run id -> the attempt whose reports the store holds
        self.finished: set[str] = set()

    def open(self, sweep: dict, store: Store) -> None:
        self.store, self.sweep = store, sweep
        self.started = start(self.address, num_cpus=self.num_cpus)  # before ray is imported (see start)
        import ray

        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.remote = ray.remote(train_remote)
        # On the driver's own node, so losing a worker node never takes the reports with it;
        # restarted if it dies anyway (reports then missing are in the final bundle).
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)
        self.hub = ray.remote(num_cpus=0, max_restarts=-1, scheduling_strategy=here)(Hub).remote()
        self.task_files = ray.put(pack(sweep["task_path"]))

    def adopt(self, trial: dict) -> bool:
        return False  # a Ray task ends with the driver that submitted it: re-run from its start

    def launch(self, sweep: dict, trial: dict) -> None:
        import json

        config = json.loads(trial["config_json"])
        payload = {"run_id": trial["run_id"], "name": run_name(sweep, trial), "config": config,
                   "seed_skill": sweep["seed_skill"]}
        self.finished.discard(trial["run_id"])
        ref = self.remote.options(num_cpus=trial_cpus(config), max_retries=NODE_RETRIES, retry_exceptions=False,
                                  name=f"skillopt-trial-{trial['run_id']}").remote(payload, self.task_files, self.hub)
        self.refs[ref] = trial

    def poll(self) -> list[Ended]:
        import ray

        self.drain()
        if not self.refs:
            return []
        ready, _ = ray.wait(list(self.refs), num_returns=len(self.refs), timeout=0)
        return [self.collect(ref) for ref in ready]

    def collect(self, ref: Any) -> Ended:
        import ray
        from ray.exceptions import RayError, RayTaskError

        trial = self.refs.pop(ref)
        try:
            data = ray.get(ref)
        except RayTaskError as exc:
            cause = exc.cause if getattr(exc, "cause", None) is not None else exc
            return Ended(trial["idx"], " ".join(str(cause).split())[:300] or type(cause).__name__, failed=True)
        except RayError as exc:  # Ray's own retries are spent (a node marked dead late is tried again)
            return Ended(trial["idx"], f"lost its node or worker {NODE_RETRIES + 1} times ({type(exc).__name__})",
                         lost=True)
        self.drain()
        self.finished.add(trial["run_id"])
        bundle.import_bundle(self.store, data, origin=f"trial {trial['idx']}", replace=True,
                             overrides=self.overrides(), live_as_stopped=False)
        return Ended(trial["idx"])

    def overrides(self) -> dict[str, Any]:
        return {"sweep_id": self.sweep["id"], "task_path": self.sweep["task_path"]}

    def drain(self) -> None:
        import ray
        from ray.exceptions import RayError

        try:
            messages = ray.get(self.hub.drain.remote(), timeout=60)
        except RayError:  # the hub is restarting: the next poll reads it
            return
        for message in messages:
            run_id = message["run_id"]
            if run_id in self.finished or not message["tables"]:
                continue
            with self.store.tx() as c:
                if self.attempts.get(run_id) != message["attempt"]:
                    bundle.forget(c, run_id)  # a first report, or a re-run from its start: begin clean
                    self.attempts[run_id] = message["attempt"]
                bundle.upsert(c, message["tables"], run_id, self.overrides())

    def running(self) -> set[int]:
        return {t["idx"] for t in self.refs.values()}

    def request_stop(self, trial: dict) -> None:
        self.hub.request_stop.remote(trial["run_id"])
        if self.store.run(trial["run_id"]) is not None:
            self.store.request_stop(trial["run_id"])

    def close(self) -> None:
        if self.started:
            import ray

            ray.shutdown()
            self.started = False
