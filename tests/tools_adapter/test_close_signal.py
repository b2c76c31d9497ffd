"""``close_signal`` built in one place and one ``AnalysisResult`` through the session (issue 40
item 8)."""

from __future__ import annotations

import ast
from pathlib import Path

import smartflow_engine
from smartflow_engine.analyzers.result import CLOSE_RULE, close_signal

PACKAGE = Path(smartflow_engine.__file__).parent


def test_close_signal_is_built_only_by_its_builder() -> None:
    """Tests that no module but analyzers/result.py writes the signal's rule fields itself."""
    writers = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict) and any(
                isinstance(k, ast.Constant) and k.value == "acceptable_to_close" for k in node.keys
            ):
                writers.append(path.relative_to(PACKAGE).as_posix())
    # (the reply schema names the field's type, it builds no signal)
    assert sorted(writers) == ["analyzers/result.py", "tools_adapter/core/replies.py"]


def test_the_spec_rule_decides_acceptable() -> None:
    assert close_signal(0, 1)["acceptable_to_close"] is True
    assert close_signal(0, 2)["acceptable_to_close"] is False
    assert close_signal(1, 0)["acceptable_to_close"] is False
    full = close_signal(0, 3, {"proven": True}, best_achievable=True)
    assert full["rule"] == CLOSE_RULE and full["reason"] == "best_achievable"
    assert close_signal(0, 1, {"proven": True})["reason"] == "rules_met"


def test_the_session_reads_the_result_not_its_json() -> None:
    """Tests that the session's loop state parses and dumps no JSON: the analyze_health tool
    hands it the AnalysisResult, which is rendered once afterwards."""
    source = (PACKAGE / "tools_adapter" / "sessions" / "loop_state.py").read_text("utf-8")
    tree = ast.parse(source)
    calls = {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert not {c for c in calls if c.startswith("json.")}
