"""Sweeps: grid search over any config keys (learning_rate × lr_scheduler, ...), each trial an
ordinary run tagged with its sweep and grid point.

    grid.py       the grid and its trials (pure: parsing, expansion, budget shares)
    ledger.py     the sweeps and sweep_trials rows (the controller's bookkeeping in the store)
    trial.py      one trial: its config, started or resumed in this process
    controller.py the loop that launches trials within the worker count and the budget
    local.py      local backend: a pool of trial processes writing to the one store
    ray_backend.py Ray backend: each trial a Ray task on any node, reporting each step
    bundle.py     a run's rows as one versioned file (export --bundle, import, Ray results)
    procs.py      process identity (host, pid, start time) to find and adopt live processes
    summary.py    per-cell means and spreads over seeds (CLI `sweep show` and the Sweeps page)
    arguments.py  the `sweep` subcommands' arguments (light: built for every command line)
    commands.py   the `sweep` subcommands' actions
"""
