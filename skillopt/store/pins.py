"""Pinned items: a task's must-not-regress items, kept as control rows in the store (`pins`).

The Rollouts page pins and unpins items (writes through Store, like approval decisions) and
offers the task's pins as a `pinned.txt` file. `python -m skillopt check` reads that file from
the task folder: committed with the task, the pins reach CI, which has no dashboard store.
Pins belong to a task (by name), not a run: an item pinned while looking at one run is
guarded in every later check of that task.
"""
from __future__ import annotations

import time
from typing import Any, Iterable

HEADER = "# Must-not-regress items of task {task}: `python -m skillopt check` fails if any of them fails.\n"


def pin(store: Any, task: str, item_ids: Iterable[str]) -> None:
    now = time.time()
    with store.tx() as c:
        c.executemany("INSERT OR IGNORE INTO pins (task, item_id, created_at) VALUES (?, ?, ?)",
                      [(task, item_id, now) for item_id in item_ids])


def unpin(store: Any, task: str, item_ids: Iterable[str]) -> None:
    with store.tx() as c:
        c.executemany("DELETE FROM pins WHERE task = ? AND item_id = ?", [(task, i) for i in item_ids])


def pinned(reader: Any, task: str) -> list[str]:
    """The task's pinned item ids, oldest first (a Reader or anything with `q`)."""
    return [r["item_id"] for r in reader.q("SELECT item_id FROM pins WHERE task = ? ORDER BY created_at, item_id",
                                           (task,))]


def pinned_file(task: str, item_ids: Iterable[str]) -> str:
    """The text of a task's pinned.txt: a comment line, then one id a line."""
    return HEADER.format(task=task) + "".join(f"{i}\n" for i in item_ids)
