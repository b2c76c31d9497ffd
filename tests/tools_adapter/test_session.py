"""Tests of sessions: modes and visibility, the confirm gate, snapshot/restore, isolation, locking."""

from __future__ import annotations

import json
import threading
import time

import pytest

from smartflow_engine import Toolbox
from smartflow_engine.tools_adapter.core import registry
from smartflow_engine.tools_adapter.core.spec import Mode, ToolContext, ToolSpec
from smartflow_engine.tools_adapter.sessions.prompts import (
    all_prompt_rules,
    prompt_part,
    prompt_rules,
)
from smartflow_engine.tools_adapter.sessions.session import (
    MAX_PENDING,
    Session,
    SessionError,
    SessionLimitError,
)
from smartflow_engine.tools_adapter.sessions.store import SessionStore
from tests.helpers.adapters import note_tool, only_in, specs_with
from tests.helpers.windows import load_window


@pytest.fixture
def journal() -> list[str]:
    """What the test-only confirm tool has written (empty until a confirm)."""
    return []


@pytest.fixture
def gated(journal: list[str]) -> Session:
    """A session over the spec's tool window with a confirm-required test tool registered."""
    return Session(load_window(), specs=specs_with(note_tool(journal)), self_check=True)


# ---------------------------------------------------------------------------------- confirm gate
def test_confirm_tool_returns_preview_and_token_without_acting(gated, journal):
    """Tests that calling a confirm-required tool holds it: a preview and a token, nothing run."""
    result = gated.invoke("record_note", {"text": "复习线代"})
    assert result.status == "pending_confirm" and result.confirm_token
    assert result.confirm_token in result.reply and "复习线代" in result.reply
    assert journal == []
    assert [p.tool for p in gated.pending()] == ["record_note"]


def test_confirm_runs_the_held_call_once(gated, journal):
    """Tests that confirm runs the held call with its arguments, and the token is then spent."""
    token = gated.invoke("record_note", {"text": "写实验报告"}).confirm_token
    done = gated.confirm(token)
    assert done.status == "ok" and done.reply == "已记录：写实验报告"
    assert journal == ["写实验报告"] and gated.pending() == []
    again = gated.confirm(token)
    assert again.status == "error" and again.error_code == "unknown_token"
    assert journal == ["写实验报告"]


def test_reject_drops_the_held_call(gated, journal):
    """Tests that reject drops the held call: nothing written, token spent."""
    token = gated.invoke("record_note", {"text": "小组讨论"}).confirm_token
    dropped = gated.reject(token)
    assert dropped.status == "rejected" and "没有任何修改" in dropped.reply
    assert journal == [] and gated.pending() == []
    assert gated.confirm(token).error_code == "unknown_token"


@pytest.mark.parametrize("token", ["", "nope", "x" * 200])
def test_unknown_tokens_are_refused(gated, journal, token):
    """Tests that confirm/reject with a token never issued is an error reply, not an exception."""
    assert gated.confirm(token).error_code == "unknown_token"
    assert gated.reject(token).error_code == "unknown_token"
    assert journal == []


@pytest.mark.parametrize(
    "args",
    [
        {},  # missing text
        {"text": ""},  # too short
        {"text": "x" * 41},  # too long
        {"text": "ok", "extra": 1},  # unknown key
        [1, 2],  # not an object
    ],
)
def test_bad_arguments_are_refused_before_a_token_is_issued(gated, journal, args):
    """Tests that a confirm-required call with bad arguments gets an argument error, no token."""
    result = gated.invoke("record_note", args)
    assert result.status == "error" and result.error_code == "invalid_args"
    assert result.reply.startswith("调用失败：参数错误，")  # record_note: a test tool, no verb
    assert gated.pending() == [] and journal == []


def test_json_confirm_tool_previews_in_json(journal):
    """Tests that a JSON confirm tool's preview is JSON with the token, and confirm returns the
    tool's own JSON."""
    session = Session(None, specs=[note_tool(journal, output="json")])
    held = session.invoke("record_note", {"text": "a"})
    assert held.data["status"] == "pending_confirm"
    assert held.data["confirm_token"] == held.confirm_token
    assert session.confirm(held.confirm_token).data == {
        "tool": "record_note",
        "success": True,
        "recorded": "a",
        "error": "",
        "error_code": "",
    }


def test_pending_confirmations_are_capped(gated, journal):
    """Tests that at most MAX_PENDING calls are held; the oldest is dropped first."""
    tokens = [
        gated.invoke("record_note", {"text": f"n{i}"}).confirm_token for i in range(MAX_PENDING + 3)
    ]
    assert [p.token for p in gated.pending()] == tokens[3:]
    assert gated.confirm(tokens[0]).error_code == "unknown_token"
    assert journal == []


def test_confirm_tool_works_without_a_state(journal):
    """Tests that a needs_state=False tool runs in a session with no schedule (upsert_task_class's
    case), while state tools say no schedule is loaded."""
    session = Session(None, specs=specs_with(note_tool(journal)))
    token = session.invoke("record_note", {"text": "草案"}).confirm_token
    assert session.confirm(token).reply == "已记录：草案"
    assert session.call("get_overview", {}) == Toolbox().call("get_overview", {})


# ---------------------------------------------------------------------------------- modes
def test_mode_selects_offered_tools_and_rules():
    """Tests that the mode decides which tools are offered and which rules apply."""
    local_only = only_in(registry.REGISTRY["find_free"], Mode.LOCAL_ADJUST)
    specs = [s if s.name != "find_free" else local_only for s in registry.TOOLS]
    session = Session(load_window(), mode="first_full", specs=specs)
    assert "find_free" not in session.tool_names()
    assert session.rules() == prompt_rules(Mode.FIRST_FULL)
    session.set_mode("local_adjust")
    assert "find_free" in session.tool_names()
    assert session.rules() == prompt_rules(Mode.LOCAL_ADJUST)
    assert [e["name"] for e in session.schemas("anthropic")] == session.tool_names()


def test_hidden_tool_is_refused_and_state_kept():
    """Tests that a tool not offered in the mode is refused (named, with the mode), state unchanged."""
    specs = [only_in(s, Mode.GLOBAL_REOPT) if s.name == "move" else s for s in registry.TOOLS]
    session = Session(load_window(), mode=Mode.LOCAL_ADJUST, specs=specs)
    before = session.state.to_json()
    result = session.invoke("move", {"task_id": 6, "new_day": 5, "new_slot_start": 3})
    assert result.status == "error" and result.error_code == "not_available"
    assert "local_adjust" in result.reply and "move" in result.reply
    assert session.state.to_json() == before and session.changes == []


def test_enabled_tools_unhide_a_tool():
    """Tests that enabled_tools offers a hidden tool in every mode."""
    hidden = note_tool([], confirm=False, modes=frozenset())
    session = Session(None, specs=specs_with(hidden), enabled_tools=[hidden.name])
    assert hidden.name in session.tool_names()
    assert session.call(hidden.name, {"text": "x"}) == "已记录：x"
    assert hidden.name not in Session(None, specs=specs_with(hidden)).tool_names()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"mode": "full"},  # not a mode
        {"mode": ""},  # empty mode
        {"enabled_tools": ["no_such_tool"]},  # enabling an unknown tool
    ],
)
def test_bad_session_arguments_raise_session_error(kwargs):
    """Tests that a bad mode or an unknown tool to enable is a SessionError naming it."""
    with pytest.raises(SessionError):
        Session(load_window(), **kwargs)


def test_set_mode_refuses_unknown_modes():
    """Tests that set_mode keeps the old mode when given an unknown one."""
    session = Session(load_window(), mode="global_reopt")
    with pytest.raises(SessionError, match="first_full"):
        session.set_mode("turbo")
    assert session.mode is Mode.GLOBAL_REOPT


def test_unknown_tool_lists_the_offered_ones():
    """Tests that an unknown tool name is a reply listing the tools offered in the mode."""
    session = Session(load_window())
    result = session.invoke("teleport", {})
    assert result.error_code == "unknown_tool"
    offered = "、".join(session.tool_names())
    assert result.reply == f"调用失败：未知工具 teleport。可用工具：{offered}。"


# ---------------------------------------------------------------------------------- snapshot
def test_snapshot_round_trip_keeps_mode_changes_and_pending(journal):
    """Tests that a session restored from its snapshot has the same state, mode, change log,
    enabled tools and pending confirmations, and that a held call can be confirmed after resume."""
    specs = specs_with(note_tool(journal))
    session = Session(
        load_window(), mode="local_adjust", specs=specs, user_id="u1", enabled_tools=["record_note"]
    )
    assert session.invoke("move", {"task_id": 6, "new_day": 5, "new_slot_start": 3}).changes
    token = session.invoke("record_note", {"text": "恢复后确认"}).confirm_token
    text = json.dumps(session.snapshot(), ensure_ascii=False)

    restored = Session.restore(text, specs=specs)
    assert restored.mode is Mode.LOCAL_ADJUST
    assert restored.session_id == session.session_id and restored.user_id == "u1"
    assert restored.state.to_json() == session.state.to_json()
    assert restored.changes == session.changes
    assert restored.pending() == session.pending()
    assert restored.enabled_tools == ("record_note",)
    assert restored.confirm(token).reply == "已记录：恢复后确认"
    assert journal == ["恢复后确认"]
    assert restored.snapshot()["pending"] == []


def test_a_token_is_bound_to_the_session_it_was_issued_in(journal):
    """Tests issue 24 item 9: a snapshot copy restored under another session id (a server's
    restore, or a library caller's) holds none of the source's pending calls, and confirming the
    source's token there is refused and runs nothing; the token still works once in its own
    session, and a held call forged into a snapshot under another session's id is dropped."""
    specs = specs_with(note_tool(journal))
    source = Session(load_window(), specs=specs, user_id="alice", enabled_tools=["record_note"])
    token = source.invoke("record_note", {"text": "只在原会话"}).confirm_token
    snap = source.snapshot()
    assert snap["pending"][0]["session_id"] == source.session_id

    store = SessionStore(session_kwargs={"specs": specs})
    copies = [
        store.restore("alice", snap),
        Session.restore(snap, specs=specs, session_id="another"),
    ]
    for copy in copies:
        assert copy.session_id != source.session_id and copy.pending() == []
        refused = copy.confirm(token)
        assert refused.status == "error" and refused.error_code == "unknown_token"
        assert copy.reject(token).error_code == "unknown_token"
    forged = dict(snap, session_id="another")  # the copy claims the entry but names its issuer
    assert Session.restore(forged, specs=specs).pending() == []
    assert journal == []
    assert source.confirm(token).status == "ok" and journal == ["只在原会话"]
    assert source.confirm(token).error_code == "unknown_token"  # single-use
    assert journal == ["只在原会话"]


def test_restored_session_is_independent():
    """Tests that writing to a restored session leaves the original untouched."""
    session = Session(load_window())
    restored = Session.restore(session.snapshot())
    restored.call("move", {"task_id": 6, "new_day": 5, "new_slot_start": 3})
    assert session.state.to_json() == load_window().to_json()
    assert restored.state.to_json() != session.state.to_json()


def test_snapshot_without_state_round_trips():
    """Tests that a session with no schedule loaded snapshots and restores as such."""
    restored = Session.restore(Session(None, mode="global_reopt").snapshot())
    assert restored.state is None and restored.mode is Mode.GLOBAL_REOPT


def _snapshot(**override):
    data = Session(load_window()).snapshot()
    data.update(override)
    return data


BAD_SNAPSHOTS = [
    ("{not json", "not valid JSON"),  # not JSON at all
    ("[]", "JSON object"),  # JSON but not an object
    (_snapshot(version=99), "version"),  # a future format
    (_snapshot(mode="fast"), "unknown mode"),  # a mode that does not exist
    (_snapshot(state={"tasks": []}), "snapshot.state"),  # a state missing its window
    (_snapshot(state="tests/data/spec_example.json"), "object or null"),  # a path is not a state
    (_snapshot(changes=[{"op": "move"}]), "snapshot.changes"),  # a change without its fields
    (_snapshot(changes={}), "must be lists"),  # changes not a list
    (_snapshot(pending=[{"token": "t", "tool": "teleport", "args": {}}]), "unknown tool"),
    (_snapshot(pending=[{"tool": "move", "args": {}}]), "missing token"),  # no token
    (_snapshot(enabled_tools="move"), "enabled_tools"),  # not a list
]


@pytest.mark.parametrize(("snapshot", "message"), BAD_SNAPSHOTS)
def test_bad_snapshots_raise_session_error(snapshot, message):
    """Tests that a malformed snapshot is one SessionError line saying what is wrong."""
    with pytest.raises(SessionError, match=message):
        Session.restore(snapshot)


# ---------------------------------------------------------------------------------- isolation
def test_sessions_never_share_state():
    """Tests that two sessions from the same JSON do not see each other's writes."""
    store = SessionStore()
    a = store.create("alice", load_window())
    b = store.create("alice", load_window())
    a.call("move", {"task_id": 6, "new_day": 5, "new_slot_start": 3})
    assert b.state.to_json() == load_window().to_json()
    assert b.changes == [] and len(a.changes) == 1


def test_store_keys_sessions_by_user():
    """Tests that a user cannot get or delete another user's session, even with its id."""
    store = SessionStore()
    mine = store.create("alice", load_window())
    assert store.get("alice", mine.session_id) is mine
    assert store.get("bob", mine.session_id) is None
    assert not store.delete("bob", mine.session_id)
    assert store.sessions("bob") == [] and store.sessions("alice") == [mine]
    assert store.delete("alice", mine.session_id) and store.get("alice", mine.session_id) is None


def test_store_limits_sessions_per_user_and_in_total():
    """Tests the per-user and total session caps."""
    store = SessionStore(max_sessions_per_user=2, max_sessions=3)
    store.create("alice", None)
    store.create("alice", None)
    with pytest.raises(SessionLimitError, match="limit 2"):
        store.create("alice", None)
    store.create("bob", None)
    with pytest.raises(SessionLimitError, match="limit 3"):
        store.create("carol", None)


def test_store_drops_idle_sessions():
    """Tests that sessions idle longer than idle_ttl_s are dropped when new ones arrive."""
    store = SessionStore(idle_ttl_s=60.0)
    old = store.create("alice", None)
    old.last_used -= 120.0
    fresh = store.create("alice", None)
    assert store.get("alice", old.session_id) is None
    assert store.get("alice", fresh.session_id) is fresh


def test_store_restore_takes_the_callers_user_and_a_new_id():
    """Tests that restoring a snapshot through the store binds it to the caller, under a new id."""
    store = SessionStore()
    source = Session(load_window(), user_id="alice", mode="local_adjust")
    restored = store.restore("bob", source.snapshot())
    assert restored.user_id == "bob" and restored.session_id != source.session_id
    assert store.get("bob", restored.session_id) is restored
    assert restored.mode is Mode.LOCAL_ADJUST


def test_numeric_user_ids_reach_the_database_context():
    """Tests that a numeric user id is passed to the tool context as the database user."""
    store = SessionStore(session_kwargs={"store": object()})
    assert store.create("42", None).toolbox.ctx.user_id == 42
    assert store.create("alice", None).toolbox.ctx.user_id is None
    assert store.create("²", None).toolbox.ctx.user_id is None


def test_calls_to_one_session_are_serialised():
    """Tests that concurrent calls to one session never run a handler at the same time."""
    active = 0
    peak = 0
    guard = threading.Lock()

    def slow(_ctx: ToolContext, _args: object) -> str:
        nonlocal active, peak
        with guard:
            active += 1
            peak = max(peak, active)
        time.sleep(0.005)
        with guard:
            active -= 1
        return "ok"

    spec = ToolSpec(
        "slow_read",
        "read",
        registry.REGISTRY["get_overview"].args_model,
        slow,
        "慢速读取（测试用）。",
        needs_state=False,
    )
    session = Session(None, specs=[spec])
    threads = [threading.Thread(target=session.call, args=("slow_read", {})) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak == 1


def test_refusals_leave_the_session_unchanged():
    """Tests that refused calls (rule violation, bad args, hidden tool) change neither the state
    nor the change log."""
    session = Session(load_window(), self_check=True)
    before = session.state.to_json()
    for name, args in [
        ("move", {"task_id": 1, "new_day": 3, "new_slot_start": 1}),  # locked
        ("place", {"task_id": 3}),  # missing arguments
        ("min_context_switch", {}),
    ]:  # not offered
        result = session.invoke(name, args)
        assert result.changes == ()
    assert session.state.to_json() == before and session.changes == []


# ---------------------------------------------------------------------------------- prompt rules
def test_prompt_rules_ship_with_the_package_per_mode():
    """Tests that every mode's rules are the shared rules followed by the mode's own file, loaded
    from the package data, and that no two modes get the same text."""
    common = prompt_part("common")
    texts = all_prompt_rules()
    assert set(texts) == {m.value for m in Mode}
    for mode, text in texts.items():
        assert text.startswith(common) and text.rstrip().endswith(prompt_part(mode))
        assert f"当前模式：{mode}" in text
    assert len(set(texts.values())) == len(texts)


def test_prompt_rules_cover_p1c():
    """Tests the P1-C rules: global modes start from analyze_health, local_adjust stays on the
    local read tools, and every mode carries scope-first, own-target and negotiation rules."""
    texts = all_prompt_rules()
    for mode in ("first_full", "global_reopt"):
        assert "从 `analyze_health` 开始" in prompt_part(mode)
    local = prompt_part("local_adjust")
    assert "不要调用 `analyze_health`" in local
    assert all(f"`{name}`" in local for name in ("get_task_info", "query_range", "find_free"))
    for text in texts.values():
        assert "先定范围再写入" in text and "自主选目标" in text and "不可行时先协商" in text
        for action in (
            "ask_expand_window",
            "ask_relax_constraints",
            "ask_reduce_scope_or_budget",
            "accept_risk_and_close",
        ):
            assert action in text


def test_prompt_rules_p15_ordinary_fields_filled_without_asking():
    """Tests issue 27 item 4 (P1.5): every mode's rules say ordinary fields may be filled
    without asking the user, only key fields need the user's confirmation."""
    for text in all_prompt_rules().values():
        assert "普通字段" in text and "不必逐项询问用户" in text


def test_prompt_rules_p15_draft_stage_is_read_and_dialogue_only():
    """Tests issue 27 item 4 (P1.5): the draft stage only reads and talks, no write tool
    (upsert_task_class included) until the user confirmed the key fields."""
    for text in all_prompt_rules().values():
        assert "草案阶段只读取和对话" in text
        assert "不调用任何写工具（包括 `upsert_task_class`）" in text


def test_prompt_rules_p15_repair_after_failed_validation():
    """Tests issue 27 item 4 (P1.5): after a failed post-write validation the model repairs the
    fields validation.issues names with the user and writes again (no blind retry)."""
    for text in all_prompt_rules().values():
        assert "`validation_failed`" in text and "`validation.issues` 点名的字段与用户" in text
        assert "再重新调用 `upsert_task_class` 写入" in text


def test_prompt_rules_say_closed_requests_refuse_writes():
    """Tests that every mode's rules tell the model that each call is a round of the request
    and that after a close writes are refused until the user's next request (issue 27)."""
    for text in all_prompt_rules().values():
        assert "`request_closed`" in text and "`round_cap`" in text and "新的请求" in text


@pytest.mark.parametrize("name", ["", "fast", "../common"])
def test_unknown_prompt_part_is_refused(name):
    """Tests that only "common" and the mode names can be loaded (no path tricks)."""
    with pytest.raises(ValueError):
        prompt_part(name)


# ---------------------------------------------------------------------------------- refusal flag
@pytest.mark.parametrize(
    ("tool", "args", "code"),
    [
        ("place", {"task_id": 3, "day": 1, "slot_start": 1}, "refused"),  # a conflict
        ("move", {"task_id": 1, "new_day": 9, "new_slot_start": 1}, "refused"),  # a locked course
        ("get_task_info", {"task_id": 99}, "refused"),  # an id that does not exist
        ("query_range", {"day": 14}, "refused"),  # a day outside the window
        ("analyze_load", {"day_from": 14}, None),  # a JSON tool's success=false keeps its own code
    ],
)
def test_tool_refusals_are_status_error(tool, args, code):
    """Tests that a tool's own refusal is status "error" from Session.invoke (is_error true),
    with the reply text exactly the Toolbox's, and no change logged."""
    session = Session(load_window(), mode="local_adjust", enabled_tools=[tool])
    result = session.invoke(tool, args)
    assert result.status == "error" and result.is_error and result.changes == ()
    assert result.reply == Toolbox(load_window()).call(tool, args)
    if code is not None:
        assert result.error_code == code
    else:
        assert result.error_code == json.loads(result.reply)["error_code"] != ""
    ok = session.invoke("place", {"task_id": 3, "day": 5, "slot_start": 1})
    assert ok.status == "ok" and not ok.is_error and len(ok.changes) == 1


def test_session_without_schedule_offers_only_stateless_tools():
    """Tests that a session with no schedule offers (and publishes schemas for) only the tools
    that work without one."""
    session = Session(None, mode="first_full")
    names = session.tool_names()
    assert names and all(not registry.REGISTRY[n].needs_state for n in names)
    assert [s["name"] for s in session.schemas("anthropic")] == names
    with_state = Session(load_window(), mode="first_full")
    assert set(names) < set(with_state.tool_names())
