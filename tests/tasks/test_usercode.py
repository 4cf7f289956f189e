"""A task's own Python from its folder: a plug-in factory that wraps the rollout, a python
evaluator, and the plug-in names refused before any of that code runs."""
from __future__ import annotations

import textwrap

from skillopt.tasks.loader import load_task, validate_task
from skillopt.tasks.task import Evaluation, TaskProtocol
from tests.helpers import TOML, Reply, make_task


# ---------------------------------------------------------------- plug-ins

PLUGIN = """\
import dataclasses
from skillopt.tasks.task import Evaluation, Trajectory


@dataclasses.dataclass(frozen=True)
class TwoTurn:
    base: object

    def __getattr__(self, name):
        return getattr(self.base, name)

    def with_seed_skill(self, text):
        return TwoTurn(self.base.with_seed_skill(text))

    def rollout(self, item, skill, complete, judge=None):
        messages = self.base.messages(skill, item)
        draft = complete(messages).text
        final = complete(messages + [{"role": "assistant", "content": draft},
                                     {"role": "user", "content": "Check and answer again."}]).text
        return Trajectory(item.id, messages[1]["content"], final, str(item.expected),
                          self.base.evaluate(item, final))


def make(task):
    return TwoTurn(task)
"""


def test_plugin_from_the_task_folder_wraps_rollout(tmp_path):
    folder = make_task(tmp_path / "plug", 'plugin = "two_turn:make"\n' + TOML, files={"two_turn.py": PLUGIN})
    task = load_task(folder)
    assert isinstance(task, TaskProtocol) and type(task).__name__ == "TwoTurn"
    replies = iter(["3", "2"])
    calls = []

    def complete(messages):
        calls.append(messages)
        return Reply(next(replies))

    traj = task.rollout(task.split("train")[0], "skill", complete)
    assert len(calls) == 2 and calls[1][-1]["content"] == "Check and answer again."
    assert traj.output == "2" and traj.evaluation.hard == 1.0
    assert task.name == "mini" and len(task.split("test")) == 3


def test_plugin_factory_that_raises(tmp_path):
    folder = make_task(tmp_path / "plug", 'plugin = "boom:make"\n' + TOML, files={"boom.py": "def make(task):\n    raise RuntimeError('no tools')\n"})
    assert "raised RuntimeError: no tools" in validate_task(folder)[0]


def test_plugin_path_is_not_a_module_name(tmp_path):
    folder = make_task(tmp_path / "plug", 'plugin = "/tmp/evil.py:make"\n' + TOML)
    assert "must look like module:name" in validate_task(folder)[0]


def test_python_evaluator_from_the_task_folder(tmp_path):
    toml = TOML.replace('type = "normalized"', 'type = "python"\nfunction = "scoring:score"')
    folder = make_task(tmp_path / "py", toml, files={"scoring.py": textwrap.dedent("""\
        def score(item, output):
            ok = output.strip() == item.expected
            return (float(ok), float(ok), "ok" if ok else f"want {item.expected}")
        """)})
    task = load_task(folder)
    assert task.evaluate(task.split("test")[0], "2") == Evaluation(1.0, 1.0, "ok")
    assert task.evaluate(task.split("test")[0], "9").feedback == "want 2"
