"""The grid of a sweep and its trials (pure: no store, no processes).

A sweep names axes (any config keys) and their values; every combination of the values, run
once per seed, is a trial. Values are typed by the config field they name, exactly like
`--set`, and every trial's config is checked before anything is stored, so a typo in a grid
fails in a blink instead of in trial 7 of 32.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from itertools import product
from typing import Any, Iterable, Mapping, Sequence

from ..config import DEFAULTS, FIELD_NAMES, RunConfig, load_mapping, parse_override
from ..errors import ConfigError

GRID_TABLE = "grid"  # the table of a config file that holds the grid: [grid] learning_rate = [2, 4, 8]
MAX_TRIALS = 1000  # a grid this large is a typo (an axis with a range pasted twice), not a plan
# Short names for the trial labels of the common axes (the run names and the Sweeps page).
SHORT = {"learning_rate": "lr", "lr_scheduler": "sched", "min_learning_rate": "min_lr", "gate_mode": "gate"}


@dataclass(frozen=True)
class Axis:
    key: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Trial:
    idx: int
    point: tuple[tuple[str, Any], ...]  # (key, value) in axis order
    seed: int

    @property
    def point_dict(self) -> dict[str, Any]:
        return dict(self.point)


def parse_axis(text: str) -> Axis:
    """`key=v1,v2,...` from the command line; each value typed like `--set key=value`."""
    if "=" not in text:
        raise ConfigError(f"grid axis '{text}' must look like key=value1,value2")
    key, raw = (part.strip() for part in text.split("=", 1))
    values = [v.strip() for v in raw.split(",")]
    if not raw or any(not v for v in values):
        raise ConfigError(f"grid axis '{text}' has an empty value")
    return _axis(key, [parse_override(f"{key}={v}")[1] for v in values], origin="--grid")


def axes_from_file(table: Any, origin: str) -> list[Axis]:
    """The [grid] table of a config file: key = [values]."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"{origin}: [{GRID_TABLE}] must be a table of key = [values]")
    axes = []
    for key, values in table.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{origin}: grid axis '{key}' must be a non-empty list of values")
        axes.append(_axis(key, values, origin=origin))
    return axes


def _axis(key: str, values: Sequence[Any], origin: str) -> Axis:
    if key not in FIELD_NAMES:
        raise ConfigError(f"{origin}: unknown config key '{key}' in the grid")
    kind = DEFAULTS[key].type
    typed = []
    for value in values:
        if kind == "float" and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if type(value).__name__ != kind:
            raise ConfigError(f"{origin}: grid axis '{key}' must hold {kind} values, got {value!r}")
        typed.append(value)
    if len(set(typed)) != len(typed):
        raise ConfigError(f"{origin}: grid axis '{key}' repeats a value")
    return Axis(key, tuple(typed))


def merge_axes(from_file: Iterable[Axis], from_cli: Iterable[Axis]) -> list[Axis]:
    """The file's axes, each replaced by a command-line axis of the same key, then the new ones."""
    cli = {a.key: a for a in from_cli}
    merged = [cli.pop(a.key, a) for a in from_file]
    return merged + list(cli.values())


def seeds_for(base: Mapping[str, Any], n_seeds: int, axes: Sequence[Axis]) -> list[int]:
    """n_seeds consecutive seeds from the config's seed (42 unless set)."""
    if n_seeds < 1:
        raise ConfigError(f"--seeds must be at least 1, got {n_seeds}")
    if n_seeds > 1 and any(a.key == "seed" for a in axes):
        raise ConfigError("'seed' is a grid axis: leave --seeds at 1")
    first = int(base.get("seed", DEFAULTS["seed"].default))
    return [first + i for i in range(n_seeds)]


def trials(axes: Sequence[Axis], seeds: Sequence[int]) -> list[Trial]:
    """Every grid point once per seed; the seed loop is outermost, so the first trials cover
    the whole grid once (a heatmap fills in early) before the next seed repeats it."""
    keys = [a.key for a in axes]
    if len(set(keys)) != len(keys):
        raise ConfigError(f"grid axis '{next(k for k in keys if keys.count(k) > 1)}' is given twice")
    size = math.prod(len(a.values) for a in axes) * len(seeds)
    if size > MAX_TRIALS:
        raise ConfigError(f"the grid has {size} trials; at most {MAX_TRIALS}")
    points = list(product(*(a.values for a in axes)))
    out = []
    for seed in seeds:
        for values in points:
            out.append(Trial(len(out), tuple(zip(keys, values)), seed))
    return out


def trial_config(base: Mapping[str, Any], trial: Trial, caps: Mapping[str, Any] | None = None,
                 origin: str = "sweep") -> RunConfig:
    """The trial's config: the base settings, its grid point, its seed, then its budget caps."""
    values = {**base, **trial.point_dict, **({} if trial_has_seed_axis(trial) else {"seed": trial.seed})}
    return load_mapping({**values, **(caps or {})}, origin=f"{origin} ({label(trial)})")


def trial_has_seed_axis(trial: Trial) -> bool:
    return any(k == "seed" for k, _ in trial.point)


def label(trial: Trial) -> str:
    """`lr=4 sched=cosine seed=42`: short enough for a run name and a table cell."""
    parts = [f"{SHORT.get(k, k)}={v}" for k, v in trial.point]
    return " ".join(parts + ([] if trial_has_seed_axis(trial) else [f"seed={trial.seed}"]))


def point_json(trial: Trial) -> str:
    return json.dumps(trial.point_dict, sort_keys=False)


# ---- budget shares ------------------------------------------------------------------------

def share(total: float, committed: float, waiting: int, base_cap: float = 0) -> float | None:
    """The cap of the next trial to start under a sweep budget `total` (0 = none).

    committed: what finished trials spent plus the caps of the running ones (a running trial
    may spend up to its cap, so the sweep can never pass its budget). The next trial gets an
    equal share of the rest among the `waiting` trials not started yet, itself included; what
    a trial leaves unspent returns to the pool when it ends. None: start nothing now.
    A base cap (the config's own max_calls or max_cost_usd) still applies when it is lower.
    """
    if total <= 0:
        return base_cap
    left = total - committed
    cap = left / max(1, waiting)
    if isinstance(total, int):
        cap = math.floor(cap)
    if cap <= 0:
        return None
    return min(cap, base_cap) if base_cap > 0 else cap
