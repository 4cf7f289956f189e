"""A sweep pointed at an existing Ray cluster (`--ray-address`), and a trial lost with its node.

The cluster is real and local: a head with no CPUs (so trials run on the other nodes) and two
worker nodes, each its own raylet, started by Ray's own test helper on 127.0.0.1. The sweep is
`python -m skillopt sweep start --backend ray --ray-address ADDR` in a subprocess, a driver of
that cluster, as a user runs it. Mid-trial, the node running the trial is removed (its raylet and
workers killed): the trial is re-run from its start on the other node and the head's store ends
with exactly the rows of one uninterrupted run.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skillopt.store.reader import Reader

ROOT = Path(__file__).resolve().parent.parent
SLOW = ["--set", "target_model=sim/target?latency=0.05", "--set", "optimizer_model=sim/optimizer",
        "--set", "num_epochs=1", "--set", "max_steps_per_epoch=2"]
MB = 2 ** 20


@pytest.fixture(scope="module")
def cluster():
    # Loopback only, no usage stats, set before Ray is imported (it reads them once).
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    from ray.cluster_utils import Cluster

    local = {"node_ip_address": "127.0.0.1", "object_store_memory": 80 * MB}
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False, **local})
    nodes = [c.add_node(num_cpus=1, **local) for _ in range(2)]
    c.wait_for_nodes()
    yield c, nodes
    c.shutdown()


def q(db: Path, sql: str, params: tuple = ()) -> list[dict]:
    try:
        r = Reader(db)
    except Exception:  # the sweep has not created its store yet
        return []
    try:
        return r.q(sql, params)
    except Exception:
        return []
    finally:
        r.close()


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def outcome(db: Path, run_id: str) -> dict:
    return {"steps": q(db, "SELECT step, decision, current_score, candidate_score, best_score FROM steps "
                           "WHERE run_id = ? ORDER BY step", (run_id,)),
            "tests": q(db, "SELECT which, score FROM tests WHERE run_id = ? ORDER BY which", (run_id,)),
            "calls": q(db, "SELECT COUNT(*) AS n FROM llm_calls WHERE run_id = ?", (run_id,))[0]["n"],
            "events": q(db, "SELECT type, COUNT(*) AS n FROM events WHERE run_id = ? GROUP BY type ORDER BY type",
                        (run_id,))}


def test_a_trial_lost_with_its_node_is_rerun_from_its_start_on_another(cluster, tmp_path):
    c, nodes = cluster
    db = tmp_path / "cluster.db"
    env = {k: v for k, v in os.environ.items() if k not in ("SKILLOPT_DB", "RAY_ADDRESS")}
    argv = [sys.executable, "-m", "skillopt", "sweep", "start", "--task", "sim-rulebook", "--grid", "learning_rate=4",
            *SLOW, "--backend", "ray", "--ray-address", c.address, "--sweep-id", "sweep-cluster", "--db", str(db)]
    log = tmp_path / "sweep.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
    try:
        deadline, row = time.monotonic() + 180, None
        while time.monotonic() < deadline and proc.poll() is None:
            rows = q(db, "SELECT r.pid, r.status, (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id) AS steps "
                         "FROM runs r WHERE r.id = 'sweep-cluster-000'")
            if rows and rows[0]["status"] == "running" and rows[0]["steps"] >= 1:
                row = rows[0]
                break
            time.sleep(0.05)
        assert row is not None, log.read_text()
        raylet = parent_of(row["pid"])  # the trial's worker process is its node's raylet's child
        raylets = [n.all_processes["raylet"][0].process.pid for n in nodes]
        assert raylet in raylets, f"the trial's worker {row['pid']} (parent {raylet}) is on no worker node {raylets}"
        c.remove_node(nodes[raylets.index(raylet)], allow_graceful=False)
        assert proc.wait(240) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert q(db, "SELECT status FROM sweep_trials") == [{"status": "completed"}]
    rerun = outcome(db, "sweep-cluster-000")
    assert {e["type"]: e["n"] for e in rerun["events"]}["started"] == 1  # the lost attempt's rows are gone
    assert len(rerun["steps"]) == 2 and q(db, "SELECT pid FROM runs")[0]["pid"] != row["pid"]
    reference = tmp_path / "reference.db"
    out = subprocess.run([sys.executable, "-m", "skillopt", "train", "--task", "sim-rulebook", *SLOW, "--set",
                          "learning_rate=4", "--run-id", "reference", "--db", str(reference)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert rerun == outcome(reference, "reference")  # nothing doubled, nothing missing
