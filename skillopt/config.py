"""RunConfig: every knob of a training run in one frozen dataclass.

Loaded from a TOML or YAML file plus ``key=value`` overrides. An unknown key, a
wrong type or an out-of-range value is a ConfigError naming the key, never a
silent default: a typo in a config must not quietly train with the wrong setting.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit

from .errors import ConfigError
from .vocabulary import SIM_PREFIX

LR_SCHEDULERS = ("cosine", "linear", "constant", "autonomous")
MERGE_MODES = ("similarity", "llm")
GATE_MODES = ("strict", "paired")
GATE_METRICS = ("auto", "hard", "soft", "mixed")
BUFFER_SCOPES = ("epoch", "run")


@dataclass(frozen=True)
class RunConfig:
    # --- schedule of the loop ---
    num_epochs: int = 4  # reference SkillOpt default; enough passes for the slow update to matter
    batch_size: int = 40  # train items per step (reference default); an epoch is one pass over train
    minibatch_size: int = 8  # trajectories per optimizer call: small enough for a small optimizer's context
    analyst_workers: int = 16  # parallel optimizer calls per step (reference default)
    max_steps_per_epoch: int = 0  # 0 = ceil(len(train)/batch_size); a cap makes demos and smoke runs short
    # --- learning rate = edit budget per step ---
    learning_rate: int = 4  # most edits applied in one step (reference default)
    min_learning_rate: int = 2  # floor of the schedule so late steps still move
    lr_scheduler: str = "cosine"  # reference default; large edits early, fine edits late
    # --- aggregation ---
    merge_mode: str = "similarity"  # deterministic and free; "llm" asks the optimizer to merge (costs a call)
    dedupe_threshold: float = 0.85  # similarity above which two proposed edits count as the same edit
    fuzzy_anchor_threshold: float = 0.85  # a fuzzy anchor must be at least this similar AND unique
    failure_only: bool = False  # reference reflects on successes too; True saves optimizer calls
    check_evidence: bool = True  # drop label rules the train data contradicts before the gate pays for them
    # Rewrite such a rule to the answer its trigger's train tasks clearly share instead of only
    # dropping it (a small optimizer often names the right clue with the wrong answer).
    repair_contradicted: bool = False  # off: on the simulated world it moved no score beyond noise
    gate_seed_against_no_skill: bool = True  # do no harm: start from no skill when it beats the seed
    # Score the candidate on the train items that motivated its edits before the gate: with no
    # net gain there, the edits are dropped as contradicted; a multi-edit candidate's edits are
    # also tried one left out each, on the items that flipped, so a harmful edit is not carried
    # by a good one.
    minibatch_check: bool = False  # off: 1.2x the target calls for no score gain on the simulated world
    # A step whose candidate the gate did not keep tries a few of its failures as "task ->
    # right answer" lines of the skill's "Worked examples" section (examples.py), gated alone;
    # the first such step tries the scorer's reply layout as a "Reply template" section instead
    # (template.py). Not in approval mode, where a person judges every edit the step proposes.
    worked_examples: bool = True  # on: it runs only after a rejected step, so it never sinks a good edit
    # The examples are the engine's extra try on every rejected step, and at the gate's own
    # 0.5 a change with no effect passes about every other try; so a trial is kept only when
    # the items it won and lost pass a sign test at this level.
    worked_examples_alpha: float = 0.2  # a no-effect change passes at most about 1 time in 5
    # Pair each worked example with a train item the incumbent got right whose right answer is
    # what the target wrongly replied to it (examples.contrasts), so that failures alone do not
    # tilt a small target toward their answers; only where replies can equal answers (labels).
    contrast_examples: bool = False  # off: no test gain on waste-sorting or returns-desk (README's learning bench)
    # Judge each worked-examples or clue-rule trial alone at that level, a worked-examples trial
    # on the selection split plus the incumbent's train rollouts it does not show (examples.fair:
    # fair items at no incumbent call). Off: selection only, kept when every trial's items
    # pooled pass, which judges a trial by its predecessors' items too.
    trial_train_items: bool = True  # on: a trial's power comes from fair items, not from other trials
    # On a task whose answers are labels, such a step first tries rules read off the train
    # split (clues.py: a word most of whose train tasks share one answer, in failures of the
    # step), gated alone and judged like the examples; worked examples when there is none.
    clue_rules: bool = True  # on: the data's own rules cost no model call to find, only their trial
    # Such a step may also try the incumbent without one block of the seed (ablation.py), the
    # seed's blocks being the only text no gate has judged; gated alone like the examples, on
    # the selection split and every train item whose incumbent rollout is known (all are fair).
    seed_ablations: int = 3  # its largest blocks, each once; later trials stay the examples' (0: none)
    # --- gate ---
    use_gate: bool = True  # without the gate every candidate is accepted (ablation only)
    # "strict" is the published rule (the candidate's mean must beat the incumbent's).
    gate_mode: str = "paired"  # strict's decisions at the default alpha on hard scores, fewer calls: stops early
    # "auto" is resolved when the run starts (for_task): hard, the reference's metric, where the
    # scorer is all-or-nothing; mixed where it gives partial credit (JSON fields, contained texts,
    # a judge's grade, a right answer in the wrong form, the task's own code). An all-or-nothing
    # item's mixed value is its hard value, so items that all score 0 or 1 get the same decisions.
    gate_metric: str = "auto"  # hard for all-or-nothing scorers, mixed where partial credit shows progress
    gate_mixed_weight: float = 0.5  # weight of soft in the mixed metric: (1-w)*hard + w*soft
    gate_min_delta: float = 0.0  # paired mode: required mean per-item gain; 0 = any strict gain
    gate_alpha: float = 0.5  # paired mode: one-sided sign test level; 0.5 accepts any net win, lower is stricter
    # Errored items are left out of every mean (a model failure is never a score); a score that
    # misses more than this share of its items is incomplete: the gate never accepts on it and a
    # run whose test scores are incomplete ends `incomplete`.
    max_error_rate: float = 0.05  # tolerates a rare timeout, not a broken backend
    rejected_buffer_scope: str = "epoch"  # reference clears the buffer each epoch; "run" keeps it all run
    # --- slow update and meta skill ---
    use_slow_update: bool = True  # reference default: longitudinal guidance written at each epoch end
    slow_update_samples: int = 20  # train items compared between epochs (reference default)
    slow_update_gate: bool = True  # the new guidance must pass the gate like any other edit
    # The slow update's gate also counts the incumbent's train rollouts outside the slow sample
    # (the guidance is written from the sample's cases alone, so the others are as fair a test
    # as the selection split, and the incumbent's values on them cost no call); paired gate only.
    slow_train_items: bool = True  # on: one gate per epoch decides the guidance, so give it every fair item
    use_meta_skill: bool = True  # optimizer strategy notes carried to the next epoch (reference default)
    # --- human in the loop ---
    approval_mode: bool = False  # off: runs unattended; on: a person approves each edit before the gate
    approval_poll_s: float = 1.0  # how often a waiting step polls the store for decisions
    # --- data ---
    selection_size: int = 0  # 0 = whole selection split; a cap trades gate noise for fewer calls
    test_size: int = 0  # 0 = whole test split
    seed: int = 42  # reference default; every random choice derives from it and the step
    # --- models ---
    target_model: str = "local/qwen2.5-coder-1.5b"  # offline default: embedded llama.cpp model, no key needed
    optimizer_model: str = "local/qwen2.5-coder-1.5b"  # same embedded model; any litellm string works
    judge_model: str = ""  # empty = optimizer_model; only used by llm_judge evaluators
    target_api_base: str = ""  # OpenAI-compatible server URL for the target, if any
    optimizer_api_base: str = ""  # OpenAI-compatible server URL for the optimizer, if any
    target_api_key_env: str = ""  # NAME of the env variable holding the target's key (never the key)
    optimizer_api_key_env: str = ""  # NAME of the env variable holding the optimizer's key
    allow_simulated_models: bool = False  # sim/ models know only simulated tasks: elsewhere every score is 0
    temperature: float = 0.0  # deterministic replies make the cache and resume exact
    # Scorings per item: 1 is the published behaviour (one reply at `temperature`); n > 1 samples
    # each item n times at `sample_temperature`, so scores carry intervals and the gate counts an
    # item as changed only beyond its sampling noise.
    samples_per_item: int = 1  # the published behaviour; n > 1 costs n times the target calls
    sample_temperature: float = 0.7  # only with samples_per_item > 1: high enough to show a reply's spread
    max_tokens: int = 512  # bounded replies keep small local models fast
    request_timeout: float = 120.0  # seconds; a local 1.5B model needs about a minute for long reflections
    max_retries: int = 4  # retries of retryable errors (429, 5xx, timeouts) with backoff
    max_concurrency: int = 8  # shared per-model in-flight limit across all stages
    use_cache: bool = True  # response + evaluation cache: resume and re-runs never pay twice
    trajectory_chars: int = 600  # per-trajectory budget in reflection prompts; longer ones are clipped with a note
    # --- budgets ---
    max_calls: int = 0  # 0 = unlimited; counts real (uncached) model calls of all roles
    max_cost_usd: float = 0.0  # 0 = unlimited; litellm cost map, local and simulated models cost 0
    # --- performance ---
    # Only where the target runs calls side by side (its provider's concurrency and max_concurrency
    # above 1): the embedded model and instant simulated ones take one call at a time, so there the
    # warming would only hold up the gate, and an accepted candidate would waste what it warmed.
    speculative_rollouts: bool = True  # roll out the next batch with the incumbent while the gate runs
    # --- integrations (skillopt/integrations): a failing one is a warning event, never a failed run ---
    mlflow_tracking_uri: str = ""  # empty = no MLflow; sqlite:///mlflow.db or http://127.0.0.1:5000 logs the run live
    mlflow_experiment: str = ""  # empty = "skillopt/<task>": a task's runs side by side in one experiment
    # Apprise URLs, space-separated; secrets only as ${ENV_VAR} placeholders, expanded when sending.
    notify: str = ""  # empty = no notifications; the store, exports and MLflow keep the placeholders

    def __post_init__(self) -> None:
        _validate(self)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def replace(self, **changes: Any) -> "RunConfig":
        return load_mapping({**self.to_dict(), **changes})

    def for_task(self, task: Any) -> "RunConfig":
        """This config with an "auto" gate metric resolved for `task`: "mixed" if its scorer
        gives partial credit (a plug-in that does not say is assumed to), else "hard"."""
        if self.gate_metric != "auto":
            return self
        return dataclasses.replace(self, gate_metric="mixed" if getattr(task, "partial_credit", True) else "hard")

    @property
    def judge(self) -> str:
        return self.judge_model or self.optimizer_model

    @property
    def simulated(self) -> bool:
        return any(m.strip().startswith(SIM_PREFIX) for m in (self.target_model, self.optimizer_model, self.judge))


_CHOICES = {
    "lr_scheduler": LR_SCHEDULERS,
    "merge_mode": MERGE_MODES,
    "gate_mode": GATE_MODES,
    "gate_metric": GATE_METRICS,
    "rejected_buffer_scope": BUFFER_SCOPES,
}
_POSITIVE = ("num_epochs", "batch_size", "minibatch_size", "analyst_workers", "learning_rate",
             "min_learning_rate", "max_tokens", "max_concurrency", "trajectory_chars", "samples_per_item")
_NON_NEGATIVE = ("max_steps_per_epoch", "slow_update_samples", "selection_size", "test_size",
                 "max_calls", "max_cost_usd", "max_retries", "gate_min_delta", "seed_ablations")
_UNIT = ("gate_mixed_weight", "dedupe_threshold", "fuzzy_anchor_threshold", "max_error_rate")


def _validate(c: RunConfig) -> None:
    _list_to_text(c, "notify")  # TOML and YAML users write a list of URLs
    for f in fields(c):
        value = getattr(c, f.name)
        expected = {"int": int, "float": float, "bool": bool, "str": str}[f.type]
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            object.__setattr__(c, f.name, float(value))
            continue
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise ConfigError(f"config key '{f.name}' must be {f.type}, got {type(value).__name__} {value!r}")
    for key, choices in _CHOICES.items():
        if getattr(c, key) not in choices:
            raise ConfigError(f"config key '{key}' must be one of {', '.join(choices)}, got {getattr(c, key)!r}")
    for key in _POSITIVE:
        if getattr(c, key) < 1:
            raise ConfigError(f"config key '{key}' must be at least 1, got {getattr(c, key)!r}")
    for key in _NON_NEGATIVE:
        if getattr(c, key) < 0:
            raise ConfigError(f"config key '{key}' must not be negative, got {getattr(c, key)!r}")
    for key in _UNIT:
        if not 0.0 <= getattr(c, key) <= 1.0:
            raise ConfigError(f"config key '{key}' must be between 0 and 1, got {getattr(c, key)!r}")
    for key in ("gate_alpha", "worked_examples_alpha"):
        if not 0.0 < getattr(c, key) <= 1.0:
            raise ConfigError(f"config key '{key}' must be in (0, 1], got {getattr(c, key)!r}")
    for key in ("temperature", "sample_temperature"):
        if not 0.0 <= getattr(c, key) <= 2.0:
            raise ConfigError(f"config key '{key}' must be between 0 and 2, got {getattr(c, key)!r}")
    if c.samples_per_item > 1 and c.sample_temperature <= 0.0:
        raise ConfigError("config key 'sample_temperature' must be above 0 when samples_per_item > 1: "
                          "at temperature 0 every sample is the same reply")
    if c.request_timeout <= 0:
        raise ConfigError(f"config key 'request_timeout' must be positive, got {c.request_timeout!r}")
    if c.min_learning_rate > c.learning_rate:
        raise ConfigError(
            f"config keys contradict: min_learning_rate ({c.min_learning_rate}) > learning_rate ({c.learning_rate})")
    if not c.target_model.strip() or not c.optimizer_model.strip():
        raise ConfigError("config keys 'target_model' and 'optimizer_model' must not be empty")
    for key in ("target_api_key_env", "optimizer_api_key_env"):
        name = getattr(c, key)
        if name and not name.replace("_", "").isalnum():
            raise ConfigError(f"config key '{key}' must name an environment variable, not hold a key")
    _validate_integrations(c)


# scheme:// (sqlite, http, https, postgresql, ...), file:PATH, or a bare databricks profile
_TRACKING_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://|file:|databricks(-uc)?$)")
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_SECRET_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")


def notify_urls(text: str) -> list[str]:
    """The Apprise URLs of a `notify` value: separated by spaces, or by commas before a scheme."""
    return [u for u in re.split(r"\s+|,\s*(?=[A-Za-z][A-Za-z0-9+.-]*://)", text.strip()) if u]


def _list_to_text(c: RunConfig, key: str) -> None:
    value = getattr(c, key)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        object.__setattr__(c, key, " ".join(v.strip() for v in value))


def _validate_integrations(c: RunConfig) -> None:
    """Malformed integration settings fail before the run is stored; an unreachable server or
    notifier fails later, as a warning. Neither setting may hold a secret's value: the config
    is stored, exported and logged as MLflow params, so secrets stay ${ENV_VAR} placeholders."""
    uri = c.mlflow_tracking_uri.strip()
    if uri and not _TRACKING_URI.match(uri):
        raise ConfigError(f"config key 'mlflow_tracking_uri' must be a URI such as sqlite:///mlflow.db or "
                          f"http://127.0.0.1:5000, got {uri!r}")
    if "@" in urlsplit(uri).netloc:
        raise ConfigError("config key 'mlflow_tracking_uri' must not hold credentials: set MLFLOW_TRACKING_USERNAME "
                          "and MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN) in the environment")
    for url in notify_urls(c.notify):
        if "://" not in url:
            raise ConfigError(f"config key 'notify' must hold Apprise URLs (scheme://...), got {url!r}")
        for name in _PLACEHOLDER.findall(url):
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ConfigError(f"config key 'notify': ${{{name}}} is not an environment variable name")
    for key in ("mlflow_tracking_uri", "notify"):
        for name, value in os.environ.items():
            if name.upper().endswith(_SECRET_SUFFIXES) and len(value) >= 6 and value in getattr(c, key):
                raise ConfigError(f"config key '{key}' holds the value of ${name}: write ${{{name}}} instead, "
                                  f"so the secret is never stored")


FIELD_NAMES = tuple(f.name for f in fields(RunConfig))
DEFAULTS = RunConfig.__dataclass_fields__


def field_help() -> dict[str, str]:
    """The why-comment of every field, read from this file, for the CLI and the New run page."""
    helps: dict[str, str] = {}
    for line in Path(__file__).read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if ":" in stripped and "#" in stripped and not stripped.startswith("#"):
            name = stripped.split(":", 1)[0]
            if name in FIELD_NAMES:
                helps[name] = stripped.split("#", 1)[1].strip()
    return helps


def load_mapping(values: Mapping[str, Any], origin: str = "config") -> RunConfig:
    unknown = sorted(set(values) - set(FIELD_NAMES))
    if unknown:
        raise ConfigError(f"{origin}: unknown config key '{unknown[0]}'")
    try:
        return RunConfig(**dict(values))
    except ConfigError as exc:
        raise ConfigError(f"{origin}: {exc}") from None


def parse_override(text: str) -> tuple[str, Any]:
    """Parse ``key=value``; the value is typed by the field it names."""
    if "=" not in text:
        raise ConfigError(f"override '{text}' must look like key=value")
    key, raw = (part.strip() for part in text.split("=", 1))
    if key not in FIELD_NAMES:
        raise ConfigError(f"unknown config key '{key}' in override '{text}'")
    kind = DEFAULTS[key].type
    try:
        if kind == "bool":
            lowered = raw.lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise ValueError
            return key, lowered in ("true", "1", "yes", "on")
        if kind == "int":
            return key, int(raw)
        if kind == "float":
            return key, float(raw)
    except ValueError:
        raise ConfigError(f"config key '{key}' must be {kind}, got {raw!r}") from None
    return key, raw


def read_file(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: config file is not UTF-8 text") from None
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text) or {}
        else:
            data = tomllib.loads(text)
    except Exception as exc:  # both parsers raise their own error types
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"{path}: cannot parse config: {first}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: config must be a mapping of key = value")
    return data


def load_config(path: str | Path | None = None, overrides: tuple[str, ...] | list[str] = (),
                base: Mapping[str, Any] | None = None) -> RunConfig:
    values: dict[str, Any] = dict(base or {})
    origin = "config"
    if path:
        values.update(read_file(path))
        origin = str(path)
    for item in overrides:
        key, value = parse_override(item)
        values[key] = value
    return load_mapping(values, origin)
