"""Tests of the reply cap (issue 45 item 6): on a 1000-day x 24-period window every reply a model
reads is at most 64 KB on every surface, keeps its totals, shows a prefix of what it cut and says
how to ask for less; the rule itself is checked against an independent checker on random
replies."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.tools_adapter.core import cap, pipeline
from smartflow_engine.tools_adapter.core.args import NoArgs
from smartflow_engine.tools_adapter.core.spec import Refused, ToolContext, ToolSpec, refused
from smartflow_engine.tools_adapter.sessions.session import Session

LIMIT = cap.MAX_REPLY_BYTES
# The reads that grow with the window, each with the call that made it largest in the report
# (check_feasibility: an infeasible window whose bottleneck names thousands of tasks).
BIG_READS: list[tuple[str, dict[str, Any]]] = [
    ("get_overview", {}),
    ("list_tasks", {}),
    ("find_free", {"duration": 1}),
    ("analyze_load", {"detail": "full", "granularity": "week"}),
    ("analyze_subjects", {"detail": "full"}),
    ("analyze_context", {"detail": "day_detail"}),
    ("analyze_tolerance", {"detail": "full"}),
    ("analyze_health", {"detail": "full"}),
    ("check_feasibility", {"time_limit_s": 10.0}),
]


@pytest.fixture(scope="module")
def huge_window() -> ScheduleState:
    """1000 days x 24 periods, fragmented, with task classes and 8,000 pending tasks (more than
    fit: check_feasibility names the bottleneck's tasks)."""
    return synthetic_window(
        3, 1000, variant="fragmented", slots_per_day=24, with_task_classes=True, pending=8000
    )


@pytest.fixture(scope="module")
def replies(huge_window: ScheduleState) -> dict[str, tuple[str, str]]:
    """Each big read's (capped, uncapped) reply of one call through the Toolbox: the pipeline's
    cap is watched to see the whole reply it was given."""
    out = {}
    tb = Toolbox(huge_window.copy_state(), max_time_limit_s=10.0)
    given: list[str] = []

    def watched(spec: ToolSpec, reply: str, limit: int | None = None) -> str:
        given.append(reply)
        return cap.cap_reply(spec, reply, limit)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pipeline, "cap_reply", watched)
        for name, args in BIG_READS:
            capped = tb.call(name, args)
            out[name] = (capped, given[-1])
    return out


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


@pytest.mark.slow
@pytest.mark.parametrize(("name", "_args"), BIG_READS)
def test_every_big_read_fits_the_cap_and_keeps_its_totals(replies, name, _args):
    """Tests that each read on the 1000 x 24 window is at most 64 KB; that a cut text reply is a
    prefix of the whole reply's lines (a too-long line keeps its head) ending with the totals and
    a way to ask for less; that a cut JSON reply keeps every value but the cut lists, each a
    prefix of the whole list, with the true totals in ``truncated``."""
    capped, whole = replies[name]
    assert _size(capped) <= LIMIT
    if _size(whole) <= LIMIT:
        assert capped == whole
        return
    if capped.startswith("{"):
        _check_json(json.loads(capped), json.loads(whole), cap.narrow_hint(name))
    else:
        _check_text(capped, whole, cap.narrow_hint(name))


def test_the_report_sizes_are_cut_here(replies):
    """Tests that the case is the report's: the uncapped replies of the overview, the load and
    tolerance analyses, full health and the infeasible check all exceed 64 KB on this window."""
    for name in ("get_overview", "analyze_load", "analyze_tolerance", "analyze_health"):
        assert _size(replies[name][1]) > LIMIT, name
    assert _size(replies["check_feasibility"][1]) > LIMIT


def _check_text(capped: str, whole: str, hint: str) -> None:
    """The independent checker of a capped text reply."""
    *shown, last = capped.split("\n")
    lines = whole.split("\n")
    assert f"回复共{len(lines)}行" in last and hint in last
    for mine, theirs in zip(shown, lines, strict=False):
        if mine != theirs:  # a too-long line: its head and how long it was
            head, _, note = mine.partition("…（此行共")
            assert theirs.startswith(head) and note == f"{len(theirs)}字，已截断）"
    assert len(shown) <= len(lines)


def _check_json(
    capped: dict[str, Any], whole: dict[str, Any], hint: str, limit: int = LIMIT
) -> None:
    """The independent checker of a capped JSON reply: walk both; where they differ the capped
    value is a shorter prefix of a list named in ``truncated.cut`` with its true total."""
    info = capped.pop("truncated")
    assert info["hint"] == hint and info["limit_kb"] == limit // 1024
    seen: set[str] = set()

    def walk(a: Any, b: Any, path: str) -> None:
        if isinstance(b, dict):
            assert isinstance(a, dict) and list(a) == list(b), path
            for key in b:
                walk(a[key], b[key], f"{path}.{key}" if path else key)
        elif isinstance(b, list) and a != b:
            assert info["cut"][path] == {"total": len(b), "shown": len(a)}, path
            assert 1 <= len(a) < len(b) and a == b[: len(a)], path
            seen.add(path)
        else:
            assert a == b, path

    walk(capped, whole, "")
    assert seen == set(info["cut"])


@pytest.mark.slow
def test_a_session_caps_its_replies_too(huge_window):
    """Tests the cap on the session surface (the same pipeline MCP and HTTP call): analyze_health
    with detail=full is capped, keeps its close signal and counts, and the round counts."""
    session = Session(huge_window.copy_state(), mode="first_full")
    result = session.invoke("analyze_health", {"detail": "full"})
    assert result.status == "ok" and _size(result.reply) <= LIMIT
    data = json.loads(result.reply)
    assert data["truncated"]["cut"] and "close_signal" in data["metrics"]
    assert data["metrics"]["close_signal"]["round"] == 1


# ---------------------------------------------------------------------------------- the rule
def _tool(reply: str, output: str = "json") -> ToolSpec:
    return ToolSpec(
        "big", "read", NoArgs, lambda _c, _a: reply, "一个大回复", output=output, needs_state=False
    )  # type: ignore[arg-type]


_items = st.one_of(
    st.integers(), st.text(max_size=30), st.dictionaries(st.text(max_size=5), st.integers())
)
_envelopes = st.fixed_dictionaries(
    {
        "tool": st.just("big"),
        "success": st.just(True),
        "metrics": st.fixed_dictionaries(
            {
                "count": st.integers(),
                "days": st.lists(_items, max_size=300),
                "detail": st.dictionaries(
                    st.sampled_from(["a", "b", "c"]), st.lists(_items, max_size=200)
                ),
            }
        ),
        "issues": st.lists(_items, max_size=100),
    }
)


@settings(max_examples=150, deadline=None)
@given(envelope=_envelopes, limit=st.integers(min_value=3_000, max_value=20_000))
def test_a_capped_json_reply_is_a_true_prefix_within_the_limit(envelope, limit):
    """Tests the JSON rule on random envelopes and limits against the independent checker: the
    reply fits, every value but the cut lists is untouched, each cut list is a prefix with its
    true total; a reply that fits comes back unchanged."""
    reply = json.dumps(envelope, ensure_ascii=False)
    capped = cap.cap_reply(_tool(reply), reply, limit)
    assert _size(capped) <= limit
    if _size(reply) <= limit:
        assert capped == reply
        return
    data = json.loads(capped)
    if data.get("success") is False:  # nothing long enough to cut (one list of huge items)
        assert data["error_code"] == "reply_too_long"
        return
    _check_json(data, envelope, cap.narrow_hint("big"), limit)


@settings(max_examples=100, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="学习ab1 ，", max_size=6000), min_size=1, max_size=60),
    limit=st.integers(min_value=3_000, max_value=20_000),
)
def test_a_capped_text_reply_is_a_prefix_with_its_totals(lines, limit):
    """Tests the text rule on random replies and limits: within the limit, a prefix of the lines
    (a too-long line keeps its head), ending with the total line count and the advice."""
    reply = "\n".join(lines)
    capped = cap.cap_reply(_tool(reply, "text"), reply, limit)
    assert _size(capped) <= limit
    if _size(reply) <= limit:
        assert capped == reply
    else:
        _check_text(capped, reply, cap.narrow_hint("big"))


def test_a_refusal_stays_a_refusal_with_its_code():
    """Tests that a long text refusal is capped and still a refusal with its stable code, and
    that the pipeline reports it as an error."""
    long = refused("查询失败：" + "、".join(f"[{i}]任务" for i in range(20_000)), "conflict")
    capped = cap.cap_reply(_tool(long, "text"), long)
    assert isinstance(capped, Refused) and capped.error_code == "conflict"
    result = pipeline.execute(ToolContext(None), _tool(long, "text"), NoArgs())
    assert result.status == "error" and result.error_code == "conflict"
    assert _size(result.reply) <= LIMIT


def test_a_json_reply_nothing_can_shorten_is_the_tools_failure():
    """Tests that a JSON reply with no list to cut (one huge string) becomes the tool's own
    failure, reply_too_long, with the advice, reported as an error by the pipeline."""
    reply = json.dumps({"tool": "big", "success": True, "note": "长" * 40_000}, ensure_ascii=False)
    result = pipeline.execute(ToolContext(None), _tool(reply), NoArgs())
    data = json.loads(result.reply)
    assert result.status == "error" and result.error_code == "reply_too_long"
    assert data["success"] is False and cap.narrow_hint("big") in data["error"]
