"""Notifications through Apprise (config key `notify`): people hear about a run without watching it.

Sent on: approval needed, a new best skill, the run finished (completed, incomplete, failed,
stopped, budget exhausted), 80% of a budget used, and a sweep finished (`sweep_finished`).

Secrets: an Apprise URL names its secret as an environment-variable placeholder
(`slack://${SLACK_TOKEN_A}/${SLACK_TOKEN_B}/${SLACK_TOKEN_C}`, `json://host/hook/${HOOK_TOKEN}`).
The placeholder is expanded here, just before sending, and nowhere else: the stored config,
run.json and MLflow params keep the placeholders. A target is named in warnings and events
by its position and scheme only, and whatever Apprise reports has the expanded values masked.

A notifier that fails (unreachable, refused, a placeholder whose variable is unset) never fails
the run: each failure is a `warning` event. Each delivered message is a `notify` event.
"""
from __future__ import annotations

import json
import logging
import re
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from .. import events as ev
from ..config import RunConfig, notify_urls
from .report import record_event

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
BUDGET_SHARE = 0.8  # warn at 80% of max_calls or max_cost_usd: time left to raise the budget or stop
BUDGET_TITLE = "SkillOpt: budget 80% used"
KINDS = {"completed": "success", "failed": "failure"}  # Apprise notify types; the rest are warnings


def expand(url: str, environ: dict[str, str]) -> tuple[str, list[str]]:
    """(the URL with its placeholders filled in, the values filled in); KeyError names an unset one."""
    values: list[str] = []

    def fill(m: re.Match) -> str:
        value = environ[m.group(1)]
        values.append(value)
        return value
    return PLACEHOLDER.sub(fill, url), values


def label(index: int, url: str) -> str:
    return f"notify target {index} ({url.split('://', 1)[0]}://)"


def send(urls: str, title: str, body: str, warn: Callable[[str], None], kind: str = "info",
         environ: dict[str, str] | None = None) -> int:
    """Send to every URL of `urls`; returns how many accepted it. Failures go to `warn`."""
    import os

    env = dict(os.environ) if environ is None else environ
    delivered = 0
    for i, url in enumerate(notify_urls(urls), 1):
        try:
            target, secrets = expand(url, env)
        except KeyError as missing:
            warn(f"{label(i, url)}: ${{{missing.args[0]}}} is not set in the environment; not sent")
            continue
        ok, detail = _deliver(target, title, body, kind)
        if ok:
            delivered += 1
        else:
            for secret in sorted(secrets, key=len, reverse=True):
                detail = detail.replace(secret, "***") if secret else detail
            warn(f"{label(i, url)} failed: {detail or 'not delivered'}")
    return delivered


@contextmanager
def _quiet(*names: str) -> Iterator[None]:
    """Keep these loggers' records from the application's handlers for a moment: Apprise logs the
    expanded URL, and urllib3 the request line with its path, at debug level (the secret)."""
    loggers = [logging.getLogger(n) for n in names]
    saved = [log.propagate for log in loggers]
    for log in loggers:
        log.propagate = False
    try:
        yield
    finally:
        for log, value in zip(loggers, saved):
            log.propagate = value


def _deliver(url: str, title: str, body: str, kind: str) -> tuple[bool, str]:
    """Send one message; (delivered, what Apprise said when it was not)."""
    try:
        import apprise

        with _quiet("apprise", "urllib3"), apprise.LogCapture(level=logging.WARNING) as logs:
            notifier = apprise.Apprise()
            if not notifier.add(url):
                return False, "Apprise does not recognise this URL"
            ok = notifier.notify(title=title, body=body, notify_type=kind)
        lines = [x.split(" - ", 2)[-1] for x in logs.getvalue().splitlines() if x.strip()]
        return bool(ok), (lines[-1] if lines else "")
    except Exception as exc:  # a plug-in's own error: a failed delivery, not a failed run
        return False, f"{type(exc).__name__}: {exc}"


class RunNotifier:
    """The trainer callback: turns a run's events into messages."""

    def __init__(self, store: Any, run_id: str, config: RunConfig, warn: Callable[[str], None]):
        self.store, self.run_id, self.config, self.warn = store, run_id, config, warn
        self.budget_sent: bool | None = None  # None: not yet looked up in the run's events
        self._run: dict[str, Any] | None = None

    def __call__(self, event: ev.Event) -> None:
        try:
            message = self.message(event)
            if message is None and isinstance(event, (ev.StageChanged, ev.StepCompleted)):
                message = self.budget()
            if message is not None:
                title, body, kind = message
                if send(self.config.notify, title, body, self.warn, kind):
                    record_event(self.store, self.run_id, "notify", f"{title}: {body}")
        except Exception as exc:  # nothing here may stop the trainer
            self.warn(f"notification skipped: {type(exc).__name__}: {exc}")

    @property
    def run(self) -> dict[str, Any]:
        if self._run is None:
            row = self.store.run(self.run_id)
            self._run = dict(row) if row is not None else {"name": self.run_id, "task": ""}
        return self._run

    def who(self) -> str:
        return f"Run {self.run['name'] or self.run_id} ({self.run['task']}, id {self.run_id})"

    def message(self, e: ev.Event) -> tuple[str, str, str] | None:
        if isinstance(e, ev.ApprovalRequested):
            return ("SkillOpt: approval needed", f"{self.who()} waits for your decision on {len(e.edits)} edit(s) "
                    f"of step {e.step}: open the Approvals page at ?run={self.run_id}.", "warning")
        gate = getattr(e, "gate", None)
        if isinstance(e, (ev.StepCompleted, ev.EpochCompleted)) and e.decision == "accept_new_best" and gate:
            what = f"step {e.step}" if isinstance(e, ev.StepCompleted) else f"the slow update after step {e.step}"
            return ("SkillOpt: new best skill", f"{self.who()}: {what} raised the selection score "
                    f"{gate.current_score:.3f} → {gate.candidate_score:.3f}.", "success")
        if isinstance(e, ev.RunFinished):
            row = self.store.run(self.run_id)
            tests = "" if row is None or row["best_test"] is None else \
                f" Test: seed {row['seed_test']:.3f} → best {row['best_test']:.3f}."
            reason = f": {e.reason}" if e.reason else ""
            return (f"SkillOpt: run {e.status}", f"{self.who()} {e.status}{reason}.{tests}",
                    KINDS.get(e.status, "warning"))
        return None

    def budget(self) -> tuple[str, str, str] | None:
        """The 80%-of-budget message, once per run (resumed runs included: it is looked up in the events)."""
        c = self.config
        if self.budget_sent or not (c.max_calls or c.max_cost_usd):
            return None
        if self.budget_sent is None:
            self.budget_sent = bool(self.store.query(
                "SELECT 1 FROM events WHERE run_id = ? AND type = 'notify' AND message LIKE ? LIMIT 1",
                (self.run_id, BUDGET_TITLE + "%")))
            if self.budget_sent:
                return None
        calls, cost = self.store.query("SELECT COUNT(*), COALESCE(SUM(cost_usd), 0) FROM llm_calls "
                                       "WHERE run_id = ? AND cached = 0", (self.run_id,))[0]
        shares = [calls / c.max_calls if c.max_calls else 0.0, cost / c.max_cost_usd if c.max_cost_usd else 0.0]
        if max(shares) < BUDGET_SHARE:
            return None
        self.budget_sent = True
        used = (f"{calls} of {c.max_calls} calls" if c.max_calls else "") + \
            (f"{', ' if c.max_calls else ''}${cost:.2f} of ${c.max_cost_usd:.2f}" if c.max_cost_usd else "")
        return BUDGET_TITLE, f"{self.who()} has used {used}; it stops when a budget runs out.", "warning"


def sweep_finished(store: Any, sweep_id: str) -> int:
    """Tell the sweep's notify targets that it finished (the sweep controller calls this as it ends);
    returns how many targets accepted the message. Never raises: a sweep outlives its notifier."""
    def warn(message: str) -> None:
        print(f"warning: {message}", file=sys.stderr)

    try:
        rows = store.query("SELECT name, task, status, reason, config_json FROM sweeps WHERE id = ?", (sweep_id,))
        if not rows:
            return 0
        row = rows[0]
        urls = (json.loads(row["config_json"] or "{}") or {}).get("notify") or ""
        urls = " ".join(urls) if isinstance(urls, list) else str(urls)
        if not urls.strip():
            return 0
        reason = f": {row['reason']}" if row["reason"] else ""
        return send(urls, f"SkillOpt: sweep {row['status']}",
                    f"Sweep {row['name'] or sweep_id} ({row['task']}, id {sweep_id}) {row['status']}{reason}.",
                    warn, KINDS.get(row["status"], "warning"))
    except Exception as exc:
        warn(f"sweep notification skipped: {type(exc).__name__}: {exc}")
        return 0
