"""Sending a prompt in the largest shape that fits (fitting.py), with a model stand-in."""
from __future__ import annotations

from dataclasses import dataclass, field

from skillopt import window
from skillopt.fitting import complete_fitted

SHAPES = (window.Shape(400, 8), window.Shape(200, 8), window.Shape(200, 4))


@dataclass
class Reply:
    error: str = ""


@dataclass
class Model:
    """Takes a prompt of at most `accepts` tokens (a message's size is its case budget x cases);
    claims `room`; fails with `error` instead when that is set."""
    room: int | None
    accepts: int = 10 ** 9
    error: str = ""
    sent: list[tuple[int, str]] = field(default_factory=list)

    def prompt_room(self):
        return self.room

    def prompt_tokens(self, messages):
        return messages[0]["size"]

    def complete_json(self, messages, *, note, stage, step, schema, validate):
        size = messages[0]["size"]
        self.sent.append((size, note))
        if self.error:
            return None, Reply(self.error)
        if size > self.accepts:
            return None, Reply(f"context: {size} tokens is over the window")
        return validate({"size": size}), Reply()


def _send(model):
    return complete_fitted(model, SHAPES, lambda s: [{"size": s.case_chars * s.cases}],
                           describe=lambda s: s.describe(8, 400), stage="x", step=1, schema={},
                           validate=lambda obj: obj["size"])


def test_no_known_window_sends_the_whole_prompt_once():
    model = Model(room=None)
    shape, value, _ = _send(model)
    assert shape == SHAPES[0] and value == 3200 and model.sent == [(3200, "")]


def test_the_first_shape_estimated_to_fit_goes_first_with_a_note_of_what_it_left_out():
    model = Model(room=2000)
    shape, value, _ = _send(model)
    assert shape == SHAPES[1] and value == 1600
    assert model.sent == [(1600, "prompt fitted to the context window: cases clipped to 200 chars")]


def test_a_refusal_of_the_prompt_tries_the_next_shape_and_a_model_failure_does_not():
    refused = Model(room=2000, accepts=1000)
    shape, value, _ = _send(refused)
    assert shape == SHAPES[2] and value == 800 and [size for size, _ in refused.sent] == [1600, 800]
    broken = Model(room=2000, error="server: 503")
    shape, value, reply = _send(broken)
    assert value is None and reply.error == "server: 503" and len(broken.sent) == 1  # not the prompt's fault
