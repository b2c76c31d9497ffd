"""Equality check for ``analyze_health`` (issue 40 item 7): the replies of two code trees agree.

``python benchmarks/check_health_equal.py BASE_TREE`` runs ``dump`` once in ``BASE_TREE`` (a
checkout of the code before a change, e.g. ``git archive <commit> | tar -x -C /tmp/base``, or a
``.json`` file holding such a dump: ``... dump BASE_TREE > base.json`` run in it) and once in the
current directory, each in its own process, and compares the replies
(``AnalysisResult.to_dict()`` without the measured times: ``feasibility.runtime_s`` and the
floor's ``runtime_s``) on every window of :mod:`benchmarks.bench_health_read` (first and second
call), on seeded synthetic windows with pending tasks, and with other arguments (strict,
relaxed, full detail, frozen days, one dimension). Prints the differing cases and exits 1 when
any differ.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

TIMED = {"runtime_s"}


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in TIMED}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def cases() -> list[tuple[str, Any, dict[str, Any]]]:
    from benchmarks.bench_health_read import SIZES, VARIANTS, placed_window
    from smartflow_engine.state.synthetic import synthetic_window

    out: list[tuple[str, Any, dict[str, Any]]] = []
    for days in SIZES:
        for variant in VARIANTS:
            for classes in (False, True):
                name = f"bench {days} {variant} {'classes' if classes else 'plain'}"
                out.append((name, lambda d=days, v=variant, c=classes: placed_window(d, v, c), {}))
    for seed in (1, 2, 3):
        for variant in VARIANTS:
            for classes in (False, True):
                name = f"placed seed {seed} 30 {variant} {classes}"
                out.append(
                    (
                        name,
                        lambda s=seed, v=variant, c=classes: placed_window(30, v, c, seed=s),
                        {},
                    )
                )
    for seed in (11, 12, 13, 14):
        for variant in VARIANTS:
            for classes in (False, True):
                name = f"pending seed {seed} 30 {variant} {classes}"
                out.append(
                    (
                        name,
                        lambda s=seed, v=variant, c=classes: synthetic_window(
                            s,
                            30,
                            variant=v,  # type: ignore[arg-type]
                            with_task_classes=c,
                        ),
                        {},
                    )
                )
    options: list[dict[str, Any]] = [
        {"threshold": "strict"},
        {"threshold": "relaxed"},
        {"detail": "full"},
        {"frozen_days": 5},
        {"dimensions": ["context"]},
        {"check_feasibility": False},
    ]
    for i, opts in enumerate(options):
        for variant in VARIANTS:
            name = f"options {json.dumps(opts)} {variant}"
            out.append((name, lambda v=variant, s=i: placed_window(30, v, True, seed=20 + s), opts))
            name = f"options pending {json.dumps(opts)} {variant}"
            out.append(
                (
                    name,
                    lambda v=variant, s=i: synthetic_window(
                        30 + s,
                        30,
                        variant=v,  # type: ignore[arg-type]
                        with_task_classes=True,
                    ),
                    opts,
                )
            )
    return out


def dump() -> dict[str, Any]:
    from smartflow_engine.analyzers import analyze_health

    out: dict[str, Any] = {}
    for name, make, opts in cases():
        state = make()
        out[name] = _strip(analyze_health(state, **opts).to_dict())
        out[name + " (again)"] = _strip(analyze_health(state, **opts).to_dict())
    return out


def _paths(a: Any, b: Any, at: str = "") -> list[str]:
    """Where two replies differ (key paths)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in {*a, *b} for p in _paths(a.get(k), b.get(k), f"{at}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            p for i, (x, y) in enumerate(zip(a, b, strict=True)) for p in _paths(x, y, f"{at}[{i}]")
        ]
    return [] if a == b else [f"{at}: {str(a)[:80]} != {str(b)[:80]}"]


def _run(tree: str) -> dict[str, Any]:
    if tree.endswith(".json"):  # a dump kept from an earlier run
        with open(tree, encoding="utf-8") as f:
            return json.load(f)  # type: ignore[no-any-return]
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "dump", os.path.abspath(tree)],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def main(argv: list[str]) -> int:
    if argv[:1] == ["dump"]:
        sys.path.insert(0, argv[1])  # this tree's package and benchmarks, not the installed ones
        print(json.dumps(dump(), ensure_ascii=False, sort_keys=True))
        return 0
    base, mine = _run(argv[0]), _run(os.getcwd())
    differ = [k for k in base if base[k] != mine.get(k)] + [k for k in mine if k not in base]
    timed = [k for k in differ if _negotiation_only(base.get(k), mine.get(k))]
    for k in differ:
        kind = "negotiation figures only" if k in timed else "DIFFERS"
        print(f"{kind}: {k} at", "; ".join(_paths(base.get(k), mine.get(k))[:4]))
    print(
        f"{len(base)} replies compared: {len(base) - len(differ)} identical, "
        f"{len(timed)} differ only in the infeasible negotiation figures (CP-SAT within a time "
        f"limit: they differ between two runs of the same code too), "
        f"{len(differ) - len(timed)} differ otherwise"
    )
    return 1 if len(differ) > len(timed) else 0


def _negotiation_only(a: Any, b: Any) -> bool:
    """Whether two replies differ only in the ``figures`` of the negotiation actions
    (``ask_*``), which the negotiation's CP-SAT solves fill within a time limit."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return False
    paths = _paths(a, b)
    acts = a.get("next_actions", [])
    for p in paths:
        if not p.startswith(".next_actions["):
            return False
        i = int(p[len(".next_actions[") : p.index("]")])
        if not p.startswith(f".next_actions[{i}].figures.") or i >= len(acts):
            return False
        if not str(acts[i].get("intent_code", "")).startswith("ask_"):
            return False
    return True


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
