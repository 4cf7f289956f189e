"""Where a run's results go besides the store: MLflow and notifications.

    mlflow_log.py   what a run looks like in MLflow: params, per-step metrics, artifacts, the
                    best skill as a Prompt Registry version (read from the store, idempotent)
    mlflow_sink.py  the live callback (config key mlflow_tracking_uri) and `export --mlflow`
    notify.py       Apprise notifications (config key notify), secrets as ${ENV_VAR} placeholders

Each integration is a trainer callback, listed after the store, so it sees every unit of work
already committed. None may cost the run: a failure is a one-line warning, recorded as a
`warning` event on the run (the Monitor page lists it) and printed on stderr, after which the
integration goes quiet for the rest of the process. Heavy clients (mlflow, apprise) are
imported only when a run's config asks for them.
"""
from __future__ import annotations

from typing import Any, Callable

from ..config import RunConfig
from .report import record_warning


def callbacks(store: Any, run_id: str, config: RunConfig) -> tuple[Callable, ...]:
    """The integration callbacks a run's config asks for (none by default)."""
    def warn(message: str) -> None:
        record_warning(store, run_id, message)

    out: list[Callable] = []
    if config.mlflow_tracking_uri.strip():
        from .mlflow_sink import MlflowSink

        out.append(MlflowSink(store, run_id, config, warn))
    if config.notify.strip():
        from .notify import RunNotifier

        out.append(RunNotifier(store, run_id, config, warn))
    return tuple(out)
