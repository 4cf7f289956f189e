"""Errors a user can cause. The CLI prints them as one line and exits non-zero."""


class UserError(Exception):
    """Bad input from the user: printed as one line, never as a traceback."""


class ConfigError(UserError):
    pass


class TaskError(UserError):
    pass


class SkillError(UserError):
    pass


class ModelError(UserError):
    """A model cannot be used at all (bad key, unknown model, dead backend)."""


class ScoringError(Exception):
    """An evaluator could not score an output (its judge model failed or replied unusably):
    the item is recorded as errored and left out of the score, never scored 0."""


class BudgetExhausted(Exception):
    """max_calls or max_cost_usd reached; the run ends with status budget_exhausted."""


class StopRequested(Exception):
    """A cooperative stop was requested through the store."""
