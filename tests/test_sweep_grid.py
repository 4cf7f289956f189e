"""The grid, its trials, the budget shares and the per-cell summary (pure: no store, no processes),
and the Sweeps page's builders (command line of the grid builder, heatmap, parallel coordinates)."""
from __future__ import annotations

import json
import math

import pytest

from skillopt.errors import ConfigError
from skillopt.sweep import grid, summary
from skillopt.ui import sweeps as ui


def test_axes_are_typed_by_the_field_they_name():
    assert grid.parse_axis("learning_rate=2,4,8").values == (2, 4, 8)
    assert grid.parse_axis("lr_scheduler=cosine, linear").values == ("cosine", "linear")
    assert grid.parse_axis("gate_alpha=0.3,1").values == (0.3, 1.0)
    assert grid.parse_axis("use_gate=true,false").values == (True, False)


@pytest.mark.parametrize("text, message", [
    ("learning_rate", "must look like key=value1,value2"),
    ("learning_rat=2,4", "unknown config key 'learning_rat'"),
    ("learning_rate=2,x", "must be int"),
    ("learning_rate=2,,4", "empty value"),
    ("learning_rate=2,2", "repeats a value"),
])
def test_bad_axes_are_one_line_errors(text, message):
    with pytest.raises(ConfigError, match=message):
        grid.parse_axis(text)


def test_a_config_file_grid_is_checked_and_the_command_line_replaces_its_axes():
    file_axes = grid.axes_from_file({"learning_rate": [2, 4], "lr_scheduler": ["cosine"]}, "s.toml")
    merged = grid.merge_axes(file_axes, [grid.parse_axis("lr_scheduler=linear,constant"),
                                         grid.parse_axis("gate_mode=strict,paired")])
    assert [(a.key, a.values) for a in merged] == [("learning_rate", (2, 4)), ("lr_scheduler", ("linear", "constant")),
                                                   ("gate_mode", ("strict", "paired"))]
    with pytest.raises(ConfigError, match="s.toml: grid axis 'learning_rate' must hold int values"):
        grid.axes_from_file({"learning_rate": ["2"]}, "s.toml")
    with pytest.raises(ConfigError, match="non-empty list"):
        grid.axes_from_file({"learning_rate": 2}, "s.toml")


def test_trials_cover_the_grid_once_per_seed_seed_loop_outermost():
    axes = [grid.parse_axis("learning_rate=2,4"), grid.parse_axis("lr_scheduler=cosine,linear,constant")]
    seeds = grid.seeds_for({}, 3, axes)
    assert seeds == [42, 43, 44]
    trials = grid.trials(axes, seeds)
    assert len(trials) == 2 * 3 * 3 and [t.idx for t in trials] == list(range(18))
    assert [t.seed for t in trials[:6]] == [42] * 6  # the whole grid once before the next seed
    assert len({(t.point, t.seed) for t in trials}) == 18
    assert grid.seeds_for({"seed": 7}, 2, axes) == [7, 8]
    with pytest.raises(ConfigError, match="'seed' is a grid axis"):
        grid.seeds_for({}, 2, [grid.parse_axis("seed=1,2")])
    with pytest.raises(ConfigError, match="at most"):
        grid.trials([grid.Axis("max_tokens", tuple(range(1, 1002)))], [1])


def test_a_trial_config_holds_its_point_and_seed_and_is_checked():
    trial = grid.Trial(3, (("learning_rate", 8), ("lr_scheduler", "linear")), 43)
    config = grid.trial_config({"num_epochs": 1}, trial, {"max_calls": 100})
    assert (config.learning_rate, config.lr_scheduler, config.seed, config.num_epochs, config.max_calls) == (
        8, "linear", 43, 1, 100)
    assert grid.label(trial) == "lr=8 sched=linear seed=43"
    bad = grid.Trial(0, (("learning_rate", 1),), 42)  # below min_learning_rate's default of 2
    with pytest.raises(ConfigError, match=r"lr=1 seed=42.*min_learning_rate"):
        grid.trial_config({}, bad)


def test_budget_shares_never_pass_the_sweep_budget():
    assert grid.share(0, 0, 5, base_cap=0) == 0  # no sweep budget: the config's own cap (none)
    assert grid.share(1000, 0, 4) == 250
    assert grid.share(1000, 0, 4, base_cap=100) == 100  # a lower per-trial cap still applies
    assert grid.share(1000, 600, 2) == 200  # what is left, shared by those not started
    assert grid.share(3, 0, 4) is None  # less than a call each: start nothing
    assert grid.share(1.0, 0.25, 3) == pytest.approx(0.25)
    # Simulate: 4 trials one at a time, each spending all of its cap or a part: the total holds.
    total, spent = 1000, []
    for waiting, use in zip((4, 3, 2, 1), (1.0, 0.5, 1.0, 1.0)):
        cap = grid.share(total, sum(spent), waiting)
        spent.append(math.floor(cap * use))
    assert sum(spent) <= total and spent[2] > spent[0]  # unspent budget returned to the pool


def rows(*specs):
    """Trial rows as the Reader returns them: (lr, sched, seed, best, test, calls, status)."""
    return [{"idx": i, "run_id": f"r{i}", "point_json": json.dumps({"learning_rate": lr, "lr_scheduler": s}),
             "seed": seed, "best_score": best, "best_test": test, "calls": calls, "cost_usd": 0.01 * calls,
             "status": status, "step": 2, "total_steps": 2, "run_status": status, "reason": ""}
            for i, (lr, s, seed, best, test, calls, status) in enumerate(specs)]


TRIALS = rows((2, "cosine", 42, 0.5, 0.4, 100, "completed"), (2, "cosine", 43, 0.7, 0.6, 120, "completed"),
              (4, "cosine", 42, 0.8, 0.7, 90, "completed"), (4, "linear", 42, None, None, 0, "running"))


def test_cells_pool_seeds_with_mean_and_sd():
    x, y = summary.heatmap_axes(["lr_scheduler", "gate_mode", "learning_rate"])
    assert (x, y) == ("learning_rate", "lr_scheduler")
    assert summary.heatmap_axes(["gate_mode"]) == ("gate_mode", None)
    cells = {(c.x, c.y): c for c in summary.cells(TRIALS, x, y)}
    first = cells[(2, "cosine")]
    assert first.trials == first.finished == 2 and first.calls == 220
    mean, sd = first.selection_mean_sd
    assert mean == pytest.approx(0.6) and sd == pytest.approx(math.sqrt(0.02))
    assert cells[(4, "linear")].selection_mean_sd == (None, None) and cells[(4, "linear")].finished == 0
    assert summary.fmt(*cells[(4, "cosine")].test_mean_sd) == "0.700"
    assert summary.best_trial(TRIALS)["idx"] == 2


def test_heatmap_shows_mean_sd_and_progress_per_cell_in_grid_order():
    x, y = "learning_rate", "lr_scheduler"
    cells = summary.cells(TRIALS, x, y)
    fig = ui.heatmap(cells, x, y, "selection", {x: [2, 4, 8], y: ["linear", "cosine"]})
    trace = fig.data[0]
    assert list(trace.x) == ["2", "4"] and list(trace.y) == ["linear", "cosine"]
    assert trace.z[1][0] == pytest.approx(0.6) and trace.z[0][0] is None
    assert trace.text[1][0].startswith("0.600 ± 0.141") and "2/2 done" in trace.text[1][0]
    marks = fig.data[1]  # the clickable marker of each cell carries its hover: calls and cost
    assert list(marks.x) == ["2", "4", "4"] and list(marks.y) == ["cosine", "cosine", "linear"]
    assert marks.customdata[0][0] == 220 and marks.customdata[0][2] == 2
    assert ui.cell_of(cells, {"points": [{"curve_number": 1, "point_index": 1}]}) is cells[1]
    assert ui.cell_of(cells, {"points": [{"curve_number": 0, "point_index": 1}]}) is None
    assert ui.cell_of(cells, None) is None
    fig = ui.parallel(TRIALS, ["learning_rate", "lr_scheduler"])
    dims = {d.label: d for d in fig.data[0].dimensions}
    assert list(dims["lr_scheduler"].ticktext) == ["cosine"] and len(dims["test"].values) == 3


def test_trial_table_links_each_started_trial_to_its_run():
    frame = ui.trials_frame(TRIALS)
    assert list(frame["open"])[:3] == ["Monitor?run=r0", "Monitor?run=r1", "Monitor?run=r2"]
    assert list(frame["grid point"])[0] == "lr=2 sched=cosine"
    assert ui.counts_line(TRIALS).startswith("3 of 4 trials finished")


def test_grid_builder_becomes_a_sweep_command_line():
    form = ui.SweepForm(task="sim-rulebook", target_model="sim/target", optimizer_model="sim/optimizer",
                        learning_rates=(2, 4), schedulers=("cosine", "linear"), extra_axes="gate_mode=strict,paired",
                        settings="num_epochs=1\n# a comment\nmax_steps_per_epoch=1", seeds=2, workers=3,
                        max_calls=500, name="grid")
    args = form.namespace()
    assert args.grid == ["learning_rate=2,4", "lr_scheduler=cosine,linear", "gate_mode=strict,paired"]
    assert args.set[-2:] == ["num_epochs=1", "max_steps_per_epoch=1"]
    assert (args.seeds, args.workers, args.max_calls, args.backend, args.name) == (2, 3, 500, "local", "grid")
    assert form.n_trials() == 2 * 2 * 2 * 2
    keyed = ui.SweepForm(task="t", target_model="openai/gpt-4o-mini", optimizer_model="openai/gpt-4o",
                         key_env="OPENAI_API_KEY")
    assert "target_api_key_env=OPENAI_API_KEY" in keyed.args()  # the variable's name travels, never a key
