"""Tests of the state model: loading the spec's JSON, round trips and refused invalid states."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.state import StateError
from smartflow_engine.state.model import (
    MAX_NESTING,
    _bad_value,
    _clean,
    _first_bad_value,
    _loads,
)
from smartflow_engine.state.synthetic import VARIANTS, synthetic_window

DATA = Path(__file__).parent.parent / "data"
SPEC = json.loads((DATA / "spec_example.json").read_text(encoding="utf-8"))


def test_spec_example_loads_verbatim():
    """Tests that the spec's §3.1 JSON loads unchanged, with its fields intact."""
    state = ScheduleState.from_json(DATA / "spec_example.json")
    assert state.num_days == 13 and state.slots_per_day == 12
    assert [t.state_id for t in state.tasks] == [1, 2, 3]
    assert state.task(1).locked and state.task(2).can_embed
    assert state.task(3).status == "pending" and state.task(3).duration == 3
    assert state.window.day_mapping[7].week == 6


@pytest.mark.parametrize("source", ["text", "path", "dict"])
def test_round_trip(source):
    """Tests that to_json/from_json round-trip the spec example from text, a path or a dict."""
    arg = {
        "text": (DATA / "spec_example.json").read_text(encoding="utf-8"),
        "path": str(DATA / "spec_example.json"),
        "dict": copy.deepcopy(SPEC),
    }[source]
    state = ScheduleState.from_json(arg)
    again = ScheduleState.from_json(state.to_json())
    assert again.to_dict() == state.to_dict()
    # Everything the spec wrote is still there with the same values.
    out = state.to_dict()
    for task_in, task_out in zip(SPEC["tasks"], out["tasks"], strict=True):
        for key, value in task_in.items():
            assert task_out[key] == value, key


@pytest.mark.parametrize("variant", VARIANTS)
def test_synthetic_round_trip(variant):
    """Tests that synthetic windows of every variant round-trip and carry embed relations."""
    state = synthetic_window(3, 30, variant=variant, with_task_classes=True)
    again = ScheduleState.from_json(state.to_json())
    assert again.to_dict() == state.to_dict()


def test_embedded_by_is_derived_on_output():
    """Tests that a host's embedded_by is written from its guest's embed_host."""
    data = copy.deepcopy(SPEC)
    data["tasks"][2].update(
        status="suggested",
        slots=[{"day": 2, "slot_start": 1, "slot_end": 2}],
        embed_host=2,
        duration=2,
    )
    state = ScheduleState.from_json(data)
    host = next(t for t in state.to_dict()["tasks"] if t["state_id"] == 2)
    assert host["embedded_by"] == 3


def _with(mutate):
    data = copy.deepcopy(SPEC)
    mutate(data)
    return data


def _add(data, **task):
    base = {"source": "task_item", "source_id": 9, "name": "新任务", "category": "学习"}
    data["tasks"].append({**base, **task})


INVALID = [
    # two non-guest tasks share day 1 periods 1-2: names both tasks, the day and the period
    (
        lambda d: _add(
            d, state_id=4, status="existing", slots=[{"day": 1, "slot_start": 2, "slot_end": 3}]
        ),
        ["[4]", "[1]", "day 1", "period 2"],
    ),
    # a block beyond the window's last day
    (
        lambda d: _add(
            d, state_id=4, status="existing", slots=[{"day": 14, "slot_start": 1, "slot_end": 2}]
        ),
        ["[4]", "day 14", "outside the window"],
    ),
    # periods beyond 12
    (
        lambda d: _add(
            d, state_id=4, status="existing", slots=[{"day": 3, "slot_start": 11, "slot_end": 13}]
        ),
        ["[4]", "day 3", "periods 11-13"],
    ),
    # reversed range
    (
        lambda d: _add(
            d, state_id=4, status="existing", slots=[{"day": 3, "slot_start": 5, "slot_end": 4}]
        ),
        ["[4]", "periods 5-4"],
    ),
    # a pending task holding slots
    (
        lambda d: d["tasks"][2].update(slots=[{"day": 3, "slot_start": 1, "slot_end": 3}]),
        ["[3]", "pending task has slots", "day 3"],
    ),
    # a placed task without slots
    (lambda d: d["tasks"][1].update(slots=[]), ["[2]", "no slots"]),
    # a pending task without a duration
    (lambda d: d["tasks"][2].pop("duration"), ["[3]", "no duration"]),
    # duplicate ids
    (lambda d: _add(d, state_id=3, status="pending", duration=2), ["duplicate state_id 3"]),
    # a guest sticking out of its host block
    (
        lambda d: _add(
            d,
            state_id=4,
            status="suggested",
            embed_host=2,
            slots=[{"day": 2, "slot_start": 2, "slot_end": 3}],
        ),
        ["[4]", "not inside", "[2]"],
    ),
    # a guest on a host that is not can_embed
    (
        lambda d: _add(
            d,
            state_id=4,
            status="suggested",
            embed_host=1,
            slots=[{"day": 1, "slot_start": 1, "slot_end": 2}],
        ),
        ["[4]", "not can_embed"],
    ),
    # a guest whose host does not exist
    (
        lambda d: _add(
            d,
            state_id=4,
            status="suggested",
            embed_host=99,
            slots=[{"day": 2, "slot_start": 1, "slot_end": 2}],
        ),
        ["[4]", "99", "does not exist"],
    ),
    # two guests in one host block
    (
        lambda d: (
            _add(
                d,
                state_id=4,
                status="suggested",
                embed_host=2,
                slots=[{"day": 2, "slot_start": 1, "slot_end": 1}],
            ),
            _add(
                d,
                state_id=5,
                status="suggested",
                embed_host=2,
                slots=[{"day": 2, "slot_start": 2, "slot_end": 2}],
            ),
        ),
        ["[5]", "already holds guest [4]"],
    ),
    # embedded_by that no guest confirms
    (lambda d: d["tasks"][1].update(embedded_by=3), ["[2]", "embedded_by 3"]),
    # a day_mapping that does not match total_days
    (lambda d: d["window"]["day_mapping"].pop(), ["day_mapping", "12 entries"]),
    # an ill-typed field
    (lambda d: d["tasks"][0].update(state_id="one"), ["state_id"]),
    # a missing window
    (lambda d: d.pop("window"), ["window"]),
    # a lone UTF-16 surrogate in a name (breaks every UTF-8 adapter)
    (lambda d: d["tasks"][0].update(name="\ud800x"), ["tasks[0].name", "lone UTF-16 surrogate"]),
    # a lone surrogate in an extra field's key
    (lambda d: d["tasks"][0].update({"\udfffnote": 1}), ["tasks[0]", "surrogate"]),
    # two days mapped to the same (week, day_of_week)
    (
        lambda d: d["window"]["day_mapping"][1].update(day_of_week=1),
        ["days 1 and 2", "week 5 day_of_week 1"],
    ),
    # a negative week
    (lambda d: d["window"]["day_mapping"][0].update(week=-1), ["day_mapping.0.week"]),
    # two task classes with one id
    (
        lambda d: d.update(task_classes=[{"id": 10, "name": "学习"}, {"id": 10, "name": "作业"}]),
        ["duplicate task class id 10", "学习", "作业"],
    ),
    # lax integers: a string, a boolean and a float where the file must hold an integer
    (lambda d: d["tasks"][0].update(state_id="1"), ["tasks.0.state_id", "integer"]),
    (lambda d: d["tasks"][2].update(duration=True), ["tasks.2.duration", "integer"]),
    (lambda d: d["window"].update(total_days=13.0), ["window.total_days", "integer"]),
    (lambda d: d["tasks"][1]["slots"][0].update(day="2"), ["slots.0.day", "integer"]),
    # a lax boolean
    (lambda d: d["tasks"][0].update(locked="true"), ["tasks.0.locked", "boolean"]),
    # NaN and Infinity in extra fields (written back they would not be standard JSON)
    (lambda d: d["tasks"][0].update(weight=float("nan")), ["tasks[0].weight", "not a finite"]),
    (lambda d: d["window"].update(meta={"x": [float("inf")]}), ["window.meta.x[0]", "finite"]),
    # nesting deep enough to exhaust a recursive writer
    (lambda d: d["tasks"][0].update(deep=_nested(200)), ["nested more than 64 levels"]),
]


def _nested(depth):
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(("mutate", "words"), INVALID)
def test_invalid_states_refused_with_one_line(mutate, words):
    """Tests that invalid states are refused with one line naming the task, day and periods."""
    with pytest.raises(StateError) as info:
        ScheduleState.from_json(_with(mutate))
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_invalid_json_text_refused():
    """Tests that text that is not JSON is refused with a StateError, not a traceback."""
    with pytest.raises(StateError, match="invalid JSON"):
        ScheduleState.from_json("{not json")


def test_guest_of_locked_host_is_locked():
    """Tests lock inheritance: a guest of a locked host counts as locked."""
    data = _with(lambda d: d["tasks"][1].update(locked=True))
    _add(
        data,
        state_id=4,
        status="suggested",
        embed_host=2,
        slots=[{"day": 2, "slot_start": 1, "slot_end": 2}],
    )
    state = ScheduleState.from_json(data)
    assert state.is_locked(state.task(4))
    assert not state.task(4).locked


def test_guest_of_locked_host_is_written_locked():
    """Tests that to_json writes `locked: true` for a guest inside a locked host, so the file says
    what the engine does (the guest acts locked), and that it reloads the same."""
    data = _with(lambda d: d["tasks"][1].update(locked=True))
    _add(
        data,
        state_id=4,
        status="suggested",
        embed_host=2,
        slots=[{"day": 2, "slot_start": 1, "slot_end": 2}],
    )
    state = ScheduleState.from_json(data)
    written = next(t for t in state.to_dict()["tasks"] if t["state_id"] == 4)
    assert written["locked"] is True
    again = ScheduleState.from_json(state.to_json())
    assert again.to_dict() == state.to_dict() and again.is_locked(again.task(4))


@pytest.mark.parametrize(
    ("payload", "words"),
    [
        ("[" * 100_000 + "]" * 100_000, ["nested too deeply"]),  # RecursionError in json
        (
            '{"window": {"total_days": 1}, "tasks": [{"state_id": 1, "name": "\\ud800x", '
            '"status": "pending", "duration": 1}]}',
            ["tasks[0].name", "surrogate"],
        ),
        ('{"window": {"total_days": 1, "x": NaN}}', ["window.x", "finite"]),
    ],
)
def test_hostile_json_text_refused(tmp_path, payload, words):
    """Tests that deeply nested JSON, lone surrogates and NaN in a file give a StateError."""
    path = tmp_path / "state.json"
    path.write_text(payload, encoding="utf-8")
    with pytest.raises(StateError) as info:
        ScheduleState.from_json(path)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize(
    ("encoding", "words"),
    [
        ("gbk", ["not UTF-8"]),  # a Chinese name in GBK
        ("utf-16", ["not UTF-8", "UTF-16"]),  # with a BOM
    ],
)
def test_non_utf8_file_refused(tmp_path, encoding, words):
    """Tests that a state file in GBK or UTF-16 is refused with a clear StateError."""
    path = tmp_path / "state.json"
    path.write_text((DATA / "spec_example.json").read_text(encoding="utf-8"), encoding=encoding)
    with pytest.raises(StateError) as info:
        ScheduleState.from_json(path)
    for word in words:
        assert word in str(info.value)


_JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), "\ud800", "x\udfff"]),
    st.text(alphabet=st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010), max_size=3),
    st.text(max_size=3),
)
_JSON_VALUES = st.recursive(
    _JSON_LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.one_of(
                st.text(max_size=2), st.integers(0, 3), st.sampled_from(["\ud800", "a\udfff"])
            ),
            inner,
            max_size=3,
        ),
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(
    value=_JSON_VALUES,
    depth=st.sampled_from([0, 1, MAX_NESTING - 2, MAX_NESTING - 1, MAX_NESTING, MAX_NESTING + 3]),
)
def test_fast_value_check_agrees_with_the_naming_walk(value, depth):
    """Tests that the fast check a state's load runs decides exactly as the path-naming walk:
    whenever it calls a value clean the walk finds nothing, so no surrogate, NaN or deep nesting
    slips through (random JSON-like values, lone surrogates in strings and keys, depths around
    the limit)."""
    data = {"window": {"meta": _nested_in(value, depth)}, "tasks": []}
    if _clean(data):
        assert _first_bad_value(data) is None
    assert _bad_value(data) == _first_bad_value(data)


def _nested_in(value, depth):
    for _ in range(depth):
        value = [value]
    return value


@settings(max_examples=300, deadline=None)
@given(value=_JSON_VALUES, ascii_only=st.booleans())
def test_fast_json_parser_reads_what_the_standard_one_reads(value, ascii_only):
    """Tests that the loader's fast JSON parser gives exactly what the standard library's gives
    on any JSON text our writers produce (surrogates, NaN and infinities included: where the
    fast parser refuses, the standard one decides), so a state parses the same either way."""
    try:
        text = json.dumps({"v": value}, ensure_ascii=ascii_only)
    except (TypeError, ValueError):
        return  # a key JSON cannot carry
    expected = json.loads(text)
    got = _loads(text)
    assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True)
