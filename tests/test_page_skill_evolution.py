"""Skill evolution page (AppTest) against a store filled by a real simulated run."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from skillopt.store.reader import Reader
from tests.helpers import tables

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "3_Skill_evolution.py")


@pytest.fixture
def page(sim_db_env):
    db, run_id = sim_db_env
    st.cache_data.clear()  # the pages' data cache is keyed by run id, not by database: tests switch databases
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception
    r = Reader(db)
    yield at, r, run_id
    r.close()


def _open_tab(at: AppTest, label: str) -> AppTest:
    """Open a tab of the page: only the open tab is built."""
    at.session_state["evo_tab"] = label
    at.run()
    assert not at.exception
    return at


def _diff(at: AppTest) -> str:
    fragments = [m.value for m in at.markdown if 'class="skillopt-diff"' in m.value]
    assert len(fragments) == 1
    return fragments[0]


def _shown(fragment: str, drop: str) -> str:
    without = re.sub(rf"<{drop}\b[^>]*>.*?</{drop}>", "", fragment, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", without))


def test_timeline_plots_every_version(page):
    at, r, run_id = page
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    markers = {t["name"]: len(t["x"]) for t in spec["data"] if t.get("mode") == "markers"}
    versions = r.versions(run_id)
    assert sum(markers.values()) == len(versions)
    assert markers["seed"] == 1
    assert markers["incumbent after step"] == len(r.steps(run_id))
    assert not tables(at)  # the versions table is sent only once its expander is opened
    at.session_state["evo_versions"] = True
    at.run()
    assert len(tables(at)[0]) == len(versions)


def test_default_diff_is_seed_to_best_and_shows_an_applied_edit(page):
    at, r, run_id = page
    fragment = _diff(at)
    best, seed = r.best_skill(run_id), r.version(run_id, 0, "seed")
    assert _shown(fragment, "del") == best.replace("\r\n", "\n")
    assert _shown(fragment, "ins") == seed.replace("\r\n", "\n")
    accepted = [e for e in r.applied_edits(run_id) if e["gate"] == "accepted"
                and e["step"] <= r.run(run_id)["best_step"] and e["content"].strip()]
    assert accepted, "the fixture run accepted edits"
    inserted = "".join(html.unescape(x) for x in re.findall(r"<ins[^>]*>(.*?)</ins>", fragment))
    assert accepted[0]["content"].strip() in inserted


def test_side_by_side_and_any_pair_of_versions(page):
    at, r, run_id = page
    step = r.applied_edits(run_id)[0]["step"]
    at.selectbox(key="diff_a").set_value(f"{step}:candidate")
    at.selectbox(key="diff_b").set_value("0:seed")
    at.radio(key="diff_mode").set_value("side by side").run()
    assert not at.exception
    fragment = _diff(at)
    assert "<table" in fragment
    cells = re.findall(r"<td[^>]*>(.*?)</td>", fragment)
    left = [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in cells[1::4]]
    assert [x for x in left if x] == [x for x in r.version(run_id, step, "candidate").splitlines() if x]


def test_only_the_open_tab_is_built(page):
    at, r, run_id = page
    assert [t.label for t in at.tabs] == ["Diff two versions", "Edits of a step", "Blame of the best skill"]
    assert len([m for m in at.markdown if 'class="skillopt-diff"' in m.value]) == 1  # the diff opens first
    assert not at.get("select_slider") and not tables(at)
    _open_tab(at, "Blame of the best skill")
    assert not [m for m in at.markdown if 'class="skillopt-diff"' in m.value]
    assert list(tables(at)[0]["text"]) == r.best_skill(run_id).splitlines()


def test_edit_cards_of_a_step(page):
    at, r, run_id = page
    _open_tab(at, "Edits of a step")
    step = at.select_slider(key="edit_step").value
    edits = r.edits(run_id, step)
    assert edits, "the default step is the last one with proposed edits"
    cards = [m.value for m in at.markdown if m.value.startswith("`edit ")]
    assert len(cards) == len(edits)
    for card, e in zip(cards, edits):
        assert card.startswith(f"`edit {e['idx'] + 1}`")  # numbered from 1, as on Approvals and Gate timeline
        assert f"`fate: {e['fate']}`" in card and f"`{e['op']}`" in card
        if e["status"]:
            assert f"`patch: {e['status']}`" in card
        if e["gate"]:
            assert f"`gate: {e['gate']}`" in card
    shown = edits[0]["content"] or edits[0]["target"]  # a delete has a target and no content
    assert any(c.value == shown for c in at.code)
    # Only clipped edits left: the cards follow the fate filter.
    fates = {e["fate"] for e in edits}
    at.multiselect(key="edit_fates").set_value(sorted(fates)[:1]).run()
    kept = [e for e in edits if e["fate"] == sorted(fates)[0]]
    assert len([m for m in at.markdown if m.value.startswith("`edit ")]) == len(kept)


def test_dropped_edits_are_listed_with_their_reason_and_other_edits_with_their_note(page):
    at, r, run_id = page
    dropped_at = [s["step"] for s in r.steps(run_id) if any(e["fate"] == "dropped" for e in r.edits(run_id, s["step"]))]
    assert dropped_at, "the simulated optimizer names lines and headings the skill lacks"
    step = dropped_at[-1]
    _open_tab(at, "Edits of a step")
    at.select_slider(key="edit_step").set_value(step).run()
    assert not at.exception
    edits = r.edits(run_id, step)
    assert "dropped" in at.multiselect(key="edit_fates").value
    cards = [m.value for m in at.markdown if m.value.startswith("`edit ")]
    assert len(cards) == len(edits)
    texts = [t.value for t in at.text]
    for card, e in zip(cards, edits):
        if e["fate"] == "dropped":
            reason, detail = e["note"].split(": ", 1)
            assert "`fate: dropped`" in card and f"`dropped: {reason}`" in card
            assert detail in texts
        elif e["note"]:
            assert e["note"] in texts
    captions = [c.value for c in at.caption]
    reasons = {e["note"].split(": ", 1)[0] for e in edits if e["fate"] == "dropped"}
    assert {f"why dropped ({x})" for x in reasons} <= set(captions)
    # Only the dropped edits: the filter keeps their cards.
    at.multiselect(key="edit_fates").set_value(["dropped"]).run()
    assert len([m for m in at.markdown if m.value.startswith("`edit ")]) == sum(e["fate"] == "dropped" for e in edits)


def test_blame_of_the_best_skill(page):
    at, r, run_id = page
    frame = tables(_open_tab(at, "Blame of the best skill"))[0]
    best = r.best_skill(run_id)
    assert list(frame["text"]) == best.splitlines()
    steps = {s["step"]: s for s in r.steps(run_id)}
    learned = frame[frame["origin"] != "seed"]
    assert len(learned) > 0
    for _, row in learned.iterrows():
        if row["origin"].startswith("slow update"):
            continue
        s = steps[int(row["step"])]
        assert row["origin"].startswith(f"step {row['step']}")
        margin = s["candidate_score"] - s["current_score"]
        if row["edit"] == "":  # a blank cell: no single edit
            assert row["effect"] == "no single edit wrote this line"
            continue
        assert f"edit {int(row['edit'])} (" in row["origin"]
        # One edit: the step's margin is its own; several: the engine stored no attribution, and it says so.
        if s["n_applied"] == 1:
            assert row["effect"] == f"{margin:+.3f} (the step's only edit)"
        else:
            assert row["effect"] == f"not attributed: {s['n_applied']} edits judged together ({margin:+.3f} for all)"
    assert len(at.get("download_button")) == 1  # the best skill's; the diff's two are on their own tab


def test_run_stopped_before_its_first_step(tmp_path, monkeypatch):
    from tests.helpers import run_sim

    db = tmp_path / "skillopt.db"
    # The budget ends just after the seed is scored: as many calls as scoring the seed takes, and a few.
    probe = run_sim(tmp_path / "probe.db", "num_epochs=1", "max_steps_per_epoch=1", "selection_size=30")
    seed_calls = Reader(tmp_path / "probe.db").q("SELECT COUNT(*) AS n FROM llm_calls WHERE run_id = ? AND step = 0 "
                                                 "AND cached = 0", (probe,))[0]["n"]
    run_id = run_sim(db, "num_epochs=2", "selection_size=30", f"max_calls={seed_calls + 5}")
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    st.cache_data.clear()
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception
    assert any(c.value.startswith("No difference") for c in at.caption)  # best is still the seed
    assert any(i.value == "No step has completed yet." for i in _open_tab(at, "Edits of a step").info)
    assert set(tables(_open_tab(at, "Blame of the best skill"))[0]["origin"]) == {"seed"}


def test_a_long_run_keeps_a_marker_for_every_candidate_and_every_text_the_incumbent_became():
    """500 steps: an incumbent a rejected step left unchanged is drawn by the line alone (500
    markers repeated it); every candidate, every new incumbent and every epoch end keep theirs."""
    from skillopt.ui import evolution as evo

    versions, sha = [{"step": 0, "kind": "seed", "sha": "s0", "score": 0.3}], "s0"
    for step in range(1, 501):
        versions.append({"step": step, "kind": "candidate", "sha": f"c{step}", "score": 0.4})
        sha = f"c{step}" if step % 3 == 0 else sha  # every 3rd candidate accepted
        versions.append({"step": step, "kind": "current", "sha": sha, "score": 0.4})
        if step % 10 == 0:
            sha = f"e{step}"
            versions.append({"step": step, "kind": "epoch_end", "sha": sha, "score": 0.4})
    markers = {t.name: list(t.x) for t in evo.timeline_figure(versions, 10).data if t.mode == "markers"}
    assert markers["candidate"] == list(range(1, 501)) and len(markers["after epoch end"]) == 50
    assert markers["incumbent after step"] == [s for s in range(1, 501) if s % 3 == 0]  # the accepted steps
    shown = {v["sha"] for v in versions if v["kind"] != "current" or v["step"] in markers["incumbent after step"]}
    assert shown == {v["sha"] for v in versions}  # every text the run held has a marker
    line = next(t for t in evo.timeline_figure(versions, 10).data if t.name == "incumbent")
    assert len(line.x) == 1 + 500 + 50  # the line still passes through every incumbent


def test_kept_worked_examples_are_the_change_that_made_their_steps_incumbent():
    from skillopt.ui import evolution as evo
    steps = [{"step": 3, "current_score": 0.5, "candidate_score": 0.45}]
    gates = [{"step": 3, "kind": "examples", "decision": "accept", "current_score": 0.5, "candidate_score": 0.6},
             {"step": 4, "kind": "examples", "decision": "reject", "current_score": 0.6, "candidate_score": 0.55}]
    deltas = evo.score_deltas(steps, [], gates)
    assert deltas == {(3, "current"): pytest.approx(0.1)}  # not the rejected candidate's -0.05
    assert evo.score_deltas(steps, []) == {(3, "current"): pytest.approx(-0.05)}
    edit = {"attribution": 0.1, "gate": "accepted"}
    assert evo.edit_effect(edit, {"candidate_score": 0.45, "current_score": 0.5, "n_applied": 3}) \
        == "+0.100 (attributed to this edit)"
    assert evo.ordered([{"step": 3, "kind": k} for k in ("current", "examples", "candidate")]) == [
        {"step": 3, "kind": "candidate"}, {"step": 3, "kind": "examples"}, {"step": 3, "kind": "current"}]
