"""The logged requests of the reference system's agent as eval tasks (issue 43 item 4).

SmartFlow-Agent's ``backend/newAgent/Log.txt`` records students asking, in Chinese, for edits
named by the calendar; with weekday-blind tools its model spent 17 to 31 calls on each, moved
items into banned periods and once found "no room" where there was. Each task here is one such
request on an upstream-shaped window built for it (``task_classes`` with half-day bans,
banned weekdays, water-course permission; items with ``task_order``), with:

- the request's text and, as data, the one-call form it maps to (``request.calls``: the
  proposal's ``tasks`` / ``slots`` arguments, what a model that understood the request sends);
- a machine-checkable goal (:class:`~.tasks.CalendarGoal`): where the named tasks end, that
  nothing else moved, that no moved or placed task uses a ruled-out period, an even spread, every
  class rule held (checked by the kit, :func:`~.goals.rule_breaks`), at most three tool calls;
- a witness: a final state meeting the goal, built here by a first-fit search over the window's
  free periods under every rule (so no goal ships unreachable).

The windows are plain data built in code (no solver, no randomness): a weekly timetable of
courses (some locked, one water course), classes as the log's (复习概率论 with blocks 1 and 6
banned — "不要早八和晚10" —, 数电期末复习, 离散数学期末复习, …) and their items placed in order.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .goals import CallRecord, Outcome, grade, rule_breaks
from .tasks import CalendarGoal, EvalRequest, EvalTask, Even, Goal, Into, ToolCallSpec

SPD = 12
WORKDAYS = frozenset(range(1, 6))
WEEKEND = frozenset({6, 7})
MAX_CALLS = 3  # the requests' budget: a query and the write, or the one-call proposal


@dataclass
class Window:
    """An upstream-shaped window under construction: courses, classes, items (raw JSON rows)."""

    days: int
    week: int  # teaching week of day 1
    dow: int  # weekday of day 1 (1 = Monday)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    classes: list[dict[str, Any]] = field(default_factory=list)

    # ------------------------------------------------------------------ calendar
    def cal(self, day: int) -> tuple[int, int]:
        """``(week, day_of_week)`` of ``day``."""
        k = self.dow - 1 + day - 1
        return self.week + k // 7, k % 7 + 1

    def mapping(self) -> list[dict[str, int]]:
        return [
            {"day_index": d, "week": self.cal(d)[0], "day_of_week": self.cal(d)[1]}
            for d in range(1, self.days + 1)
        ]

    def week_days(self, week: int, weekdays: Iterable[int] = range(1, 8)) -> list[int]:
        wanted = set(weekdays)
        return [
            d
            for d in range(1, self.days + 1)
            if self.cal(d)[0] == week and self.cal(d)[1] in wanted
        ]

    # ------------------------------------------------------------------ content
    def course(
        self, name: str, weekdays: Iterable[int], start: int, end: int, *, water: bool = False
    ) -> None:
        """A course meeting on ``weekdays`` at ``start..end`` (a locked one, or an unlocked
        water course)."""
        wanted = set(weekdays)
        blocks = [
            {"day": d, "slot_start": start, "slot_end": end}
            for d in range(1, self.days + 1)
            if self.cal(d)[1] in wanted
        ]
        row: dict[str, Any] = {
            "state_id": len(self.tasks) + 1,
            "source": "event",
            "source_id": 100 + len(self.tasks),
            "name": name,
            "category": "课程",
            "status": "existing",
            "locked": not water,
            "slots": blocks,
        }
        if water:
            row["can_embed"] = True
        self.tasks.append(row)

    def klass(
        self,
        cid: int,
        name: str,
        *,
        blocks: Iterable[int] = (),
        weekdays: Iterable[int] = (),
        filler: bool = True,
        budget: int = 16,
    ) -> None:
        """A task class with the reference system's fields (``excluded_slots`` are half-day
        blocks, given beside ``allow_filler_course``, as that system always writes them)."""
        self.classes.append(
            {
                "id": cid,
                "name": name,
                "strategy": "steady",
                "total_slots": budget,
                "allow_filler_course": filler,
                "excluded_slots": sorted(blocks),
                "excluded_days_of_week": sorted(weekdays),
            }
        )

    def item(self, cid: int, name: str, day: int | None, need: int = 2) -> int:
        """The class's next item (its ``task_order``): placed on ``day`` at the first free
        period its rules allow after the class's previous item, or pending (``day`` None)."""
        order = 1 + sum(1 for t in self.tasks if t.get("category_id") == cid)
        c = self._class(cid)
        row: dict[str, Any] = {
            "state_id": len(self.tasks) + 1,
            "source": "task_item",
            "source_id": 2000 + len(self.tasks),
            "name": name,
            "category": c["name"],
            "category_id": cid,
            "task_order": order,
        }
        if day is None:
            row.update(status="pending", duration=need)
        else:
            row.update(status="suggested", duration=need)
            self.tasks.append(row)  # its own predecessors are the rows before it
            start = self.first_place(self.state(), row["state_id"], [day], need)
            self.tasks.pop()
            if start is None:
                raise ValueError(f"{name}: no place on day {day}")
            row["slots"] = [{"day": day, "slot_start": start, "slot_end": start + need - 1}]
        self.tasks.append(row)
        return int(row["state_id"])

    def _class(self, cid: int) -> dict[str, Any]:
        return next(c for c in self.classes if c["id"] == cid)

    def state(self) -> dict[str, Any]:
        return {
            "window": {
                "total_days": self.days,
                "slots_per_day": SPD,
                "day_mapping": self.mapping(),
            },
            "tasks": copy.deepcopy(self.tasks),
            "task_classes": copy.deepcopy(self.classes),
        }

    # ------------------------------------------------------------------ places
    def first_place(
        self,
        data: dict[str, Any],
        tid: int,
        days: Iterable[int],
        need: int,
        avoid: Iterable[int] = (),
    ) -> int | None:
        """The first start (on ``days`` in order, periods ascending) where task ``tid`` may take
        ``need`` free periods in ``data`` with every class rule held and off ``avoid``: tried by
        putting it there and asking :func:`~.goals.rule_breaks`."""
        ruled_out = set(avoid)
        by_id = {t["state_id"]: t for t in data["tasks"]}
        task = by_id[tid]
        for day in days:
            taken = {
                p
                for t in data["tasks"]
                if t["state_id"] != tid and t.get("embed_host") is None
                for b in t.get("slots") or ()
                if b["day"] == day
                for p in range(b["slot_start"], b["slot_end"] + 1)
            }
            for start in range(1, SPD - need + 2):
                run = set(range(start, start + need))
                if run & taken or run & ruled_out:
                    continue
                saved = task.get("slots")
                task["slots"] = [{"day": day, "slot_start": start, "slot_end": start + need - 1}]
                ok = not rule_breaks(data)
                task["slots"] = saved
                if ok:
                    return start
        return None


def _put(
    w: Window, data: dict[str, Any], tid: int, days: Iterable[int], avoid: Iterable[int] = ()
) -> bool:
    """Put task ``tid`` (two periods) at the first place :meth:`Window.first_place` finds on
    ``days`` (in order); ``False`` when there is none."""
    for day in days:
        start = w.first_place(data, tid, [day], 2, avoid)
        if start is not None:
            _place(data, tid, day, start, 2)
            return True
    return False


def _place(data: dict[str, Any], tid: int, day: int, start: int, need: int) -> None:
    task = next(t for t in data["tasks"] if t["state_id"] == tid)
    task["slots"] = [{"day": day, "slot_start": start, "slot_end": start + need - 1}]
    if task["status"] == "pending":
        task["status"] = "suggested"


def _spread(w: Window, data: dict[str, Any], ids: list[int], days: list[int], cap: int) -> bool:
    """Place ``ids`` (in order) on ``days``, at most ``cap`` a day and at least ``cap - 1``,
    every rule held: a depth-first search over the days (small: a week's items)."""
    if not ids:
        counts = {d: _on_day(data, d, w) for d in days}
        return min(counts.values()) >= cap - 1
    tid = ids[0]
    for day in days:
        if _on_day(data, day, w) >= cap:
            continue
        start = w.first_place(data, tid, [day], 2)
        if start is None:
            continue
        trial = copy.deepcopy(data)
        _place(trial, tid, day, start, 2)
        trial.setdefault("_moved", []).append(tid)
        if _spread(w, trial, ids[1:], days, cap):
            data.clear()
            data.update(trial)
            return True
    return False


def _on_day(data: dict[str, Any], day: int, w: Window) -> int:
    """Items this spread has put on ``day``."""
    moved = set(data.get("_moved", ()))
    return sum(1 for t in data["tasks"] if t["state_id"] in moved and t["slots"][0]["day"] == day)


def _study(data: dict[str, Any], days: Iterable[int]) -> list[int]:
    """Placed study items with a block on one of ``days``, by position."""
    wanted = set(days)
    rows = [
        (min((b["day"], b["slot_start"]) for b in t["slots"]), t["state_id"])
        for t in data["tasks"]
        if t.get("source") != "event"
        and t.get("slots")
        and any(b["day"] in wanted for b in t["slots"])
    ]
    return [tid for _, tid in sorted(rows)]


def _task(
    w: Window,
    ident: str,
    text: str,
    mode: str,
    calls: list[ToolCallSpec],
    goal: CalendarGoal,
    witness: dict[str, Any],
    placed: int | None = None,
    spread_days: list[int] | None = None,
) -> EvalTask:
    """The task, its witness checked against its whole goal (nothing unreachable ships)."""
    state = w.state()
    witness.pop("_moved", None)
    changed = {t["state_id"]: t for t in witness["tasks"]}
    task = EvalTask(
        id=ident,
        kind="calendar",
        days=w.days,
        request=EvalRequest(
            type="calendar", mode=mode, text=text, calls=calls, spread_days=spread_days or []
        ),
        goal=Goal(
            calendar=goal,
            placed_periods=placed,
            locked_ids=[t["state_id"] for t in state["tasks"] if t.get("locked")],
            max_tool_calls=MAX_CALLS,
        ),
        proof={
            "source": "backend/newAgent/Log.txt of LoveLosita/SmartFlow-Agent",
            "witness": "first-fit under every class rule (evalkit/calendar_tasks.py)",
            "rules_before": rule_breaks(state),
        },
        state=state,
        witness=[changed[t["state_id"]] for t in state["tasks"] if changed[t["state_id"]] != t],
    )
    bad = [
        r
        for r in grade(task, Outcome(task.witness_state(), [CallRecord("x", {}, "ok")]))
        if not r.ok
    ]
    if bad or rule_breaks(state):
        raise ValueError(f"{ident}: witness fails {bad} or the window breaks a rule")
    return task


# ---------------------------------------------------------------------------------- the windows
LOG_ITEMS = {
    2: (
        "第一章 随机事件与概率",
        "第二章 条件概率与全概率公式",
        "第三章 随机变量及其分布",
        "第四章 多维随机变量",
        "第五章 数字特征与大数定律",
        "第六章 中心极限定理与参数估计",
        "综合刷题与错题回顾",
        "模拟考试与查漏补缺",
    ),
    3: (
        "数制与码制、逻辑代数基础",
        "组合逻辑电路分析方法",
        "组合逻辑电路设计方法（含卡诺图）",
        "译码器、编码器、多路选择器综合应用",
        "触发器工作原理与时序特性",
        "计数器设计与分析",
        "寄存器与移位寄存器",
        "时序逻辑电路设计（同步/异步）",
    ),
    4: (
        "命题逻辑与等值演算",
        "谓词逻辑与量词推理",
        "集合与关系基本性质",
        "关系闭包与等价关系/偏序关系",
        "函数与映射（单射满射双射）",
        "代数系统与群环域入门",
        "图的基本概念与图的表示",
        "欧拉图、哈密顿图、最短路",
    ),
    5: (
        "线性表（顺序表/链表）与复杂度分析",
        "栈与队列及典型应用",
        "串与模式匹配（KMP）",
        "数组与广义表、稀疏矩阵",
        "树与二叉树遍历、线索化",
        "二叉排序树、AVL、红黑树概念",
        "堆与优先队列",
        "图的存储与遍历（DFS/BFS）",
    ),
    6: ("电磁场基本定律", "静电场与边值问题", "恒定电流与磁场", "时变电磁场"),
    7: ("信号的时域分析", "卷积与系统响应", "傅里叶变换", "拉普拉斯变换"),
}


def _timetable(w: Window) -> None:
    """The week's courses: locked ones Monday to Friday, a water course (思政), a weekend lab."""
    w.course("高等数学", (1, 3), 1, 2)
    w.course("大学英语", (1,), 5, 6)
    w.course("大学物理", (2,), 3, 4)
    w.course("习近平新时代中国特色社会主义思想概论", (2,), 9, 10, water=True)
    w.course("程序设计", (3,), 7, 8)
    w.course("线性代数", (4,), 3, 4)
    w.course("体育", (5,), 5, 6)
    w.course("数字电路实验", (6,), 3, 4)


def _classes(w: Window, *extra: int) -> None:
    w.klass(2, "复习概率论", blocks=(1, 6))  # "不要早八和晚10": blocks 1 and 6 banned
    w.klass(3, "数电期末复习", blocks=(6,), weekdays=(3,), filler=False)  # never on Wednesday
    w.klass(4, "离散数学期末复习", blocks=(1,), weekdays=(5,))  # never on Friday
    w.klass(5, "数据结构期末复习", filler=False)
    names = {6: "电磁场与电磁波", 7: "信号与系统"}
    for cid in extra:
        w.klass(cid, names[cid])


def _items(w: Window, plan: dict[int, list[int | None]]) -> None:
    for cid, days in plan.items():
        for i, day in enumerate(days):
            w.item(cid, LOG_ITEMS[cid][i], day)


def _weekend_task(ident: str, text: str, w: Window) -> EvalTask:
    """Every study item on a weekend moves to a workday of its own week; nothing else moves."""
    data = w.state()
    weekend = [d for d in range(1, w.days + 1) if w.cal(d)[1] in WEEKEND]
    moving = _study(data, weekend)
    witness = copy.deepcopy(data)
    into = []
    for tid in moving:
        day = next(t for t in data["tasks"] if t["state_id"] == tid)["slots"][0]["day"]
        days = w.week_days(w.cal(day)[0], WORKDAYS)
        into.append(Into(task_ids=[tid], days=days))
        if not _put(w, witness, tid, days):
            raise ValueError(f"{ident}: no weekday place for [{tid}] in its week")
    slots = {"day_scope": "workday", "same_week": True}
    return _task(
        w,
        ident,
        text,
        "local_adjust",
        [
            ToolCallSpec(
                tool="apply_proposal", args={"tasks": {"day_scope": "weekend"}, "slots": slots}
            )
        ],
        CalendarGoal(
            into=into,
            unchanged=[t["state_id"] for t in data["tasks"] if t["state_id"] not in moving],
        ),
        witness,
    )


# the two weekend requests: (task id, the request's words, days, week and weekday of day 1, the
# days of each class's items)
WEEKEND_REQUESTS: tuple[tuple[str, str, int, int, int, dict[int, list[int | None]]], ...] = (
    (  # the log's commonest request, from a Wednesday of week 12 (as the log's window)
        "21d-log-weekend-to-weekdays",
        "把所有周末的任务都挪到周一到周五，不要越周移动",
        21,
        12,
        3,
        {
            2: [2, 4, 8, 11, 16, 19],
            3: [3, 5, 9, 12, 17, 18],
            4: [1, 4, 13, 18, 20],
            5: [2, 6, 10, 15],
        },
    ),
    (  # the same request as the log's second run worded it, from a Monday
        "28d-log-each-weekend",
        "帮我把每周周末的任务都挪进各自周的周一到周五，不要越周移动",
        28,
        3,
        1,
        {
            2: [1, 6, 9, 14, 20, 27],
            3: [2, 7, 13, 18, 25, 26],
            4: [3, 6, 11, 21, 28],
            5: [4, 13, 19, 23],
        },
    ),
)


def weekend_tasks() -> list[EvalTask]:
    """The weekend requests of :data:`WEEKEND_REQUESTS`."""
    out = []
    for ident, text, days, week, dow, plan in WEEKEND_REQUESTS:
        w = Window(days, week, dow)
        _timetable(w)
        _classes(w)
        _items(w, plan)
        out.append(_weekend_task(ident, text, w))
    return out


def first_plan_no_early_or_late() -> EvalTask:
    """ "帮我排一下这些任务类，直接排，不要早八和晚10": every item placed, none in periods 1-2 or
    11-12 (the classes themselves ban other blocks), on 14 days from a Monday."""
    w = Window(14, 7, 1)
    _timetable(w)
    w.klass(2, "复习概率论", blocks=(3,))
    w.klass(3, "数电期末复习", weekdays=(6, 7), filler=False)
    w.klass(4, "离散数学期末复习", blocks=(4,), weekdays=(3,))
    _items(w, {2: [None] * 5, 3: [None] * 5, 4: [None] * 4})
    data = w.state()
    witness = copy.deepcopy(data)
    avoid = [1, 2, 11, 12]
    pending = [t["state_id"] for t in data["tasks"] if t["status"] == "pending"]
    spread = {2: [2, 4, 7, 9, 12], 3: [1, 3, 8, 10, 12], 4: [2, 5, 9, 13]}
    for cid, days in spread.items():
        ids = [t["state_id"] for t in data["tasks"] if t.get("category_id") == cid]
        for tid, day in zip(ids, days, strict=True):
            if not _put(w, witness, tid, [day], avoid):
                raise ValueError(f"no place for [{tid}] on day {day}")
    return _task(
        w,
        "14d-log-no-early-or-late",
        "帮我排一下这些任务类，直接排，不要早八和晚10",
        "first_full",
        [ToolCallSpec(tool="apply_proposal", args={"slots": {"exclude_sections": avoid}})],
        CalendarGoal(
            into=[Into(task_ids=pending, days=list(range(1, w.days + 1)))],
            unchanged=[t["state_id"] for t in data["tasks"] if t["state_id"] not in pending],
            avoid_periods=avoid,
        ),
        witness,
        placed=2 * len(pending),
    )


def week17_to_week12_and_spread() -> EvalTask:
    """ "17周任务太多了，你帮我随便挪两个到第12周，然后再把第17周的任务限定在周一到周五均匀化": on 42
    days from a Wednesday of week 12 (the log's window), week 17 holds eight items piled on
    Thursday and the weekend; two of them (the first items of two classes that start in week 17)
    may go back to week 12 under the order rule; the others spread over Monday-Friday."""
    w = Window(42, 12, 3)
    _timetable(w)
    _classes(w, 6, 7)
    _items(
        w,
        {
            2: [2, 9, 16, 23, 30, 37],
            3: [3, 10, 17, 24, 31, 39],
            4: [6, 13, 20, 27, 37, 40],
            5: [8, 15, 22, 29, 39],
            6: [37, 41],
            7: [40, 42],
        },
    )
    data = w.state()
    week12, week17 = w.week_days(12), w.week_days(17)
    workdays17 = w.week_days(17, WORKDAYS)
    piled = _study(data, week17)
    back = [
        t["state_id"]
        for t in data["tasks"]
        if t["state_id"] in piled and t.get("category_id") in (6, 7) and t["task_order"] == 1
    ]
    rest = [tid for tid in piled if tid not in back]
    witness = copy.deepcopy(data)
    for tid in back:
        if not _put(w, witness, tid, week12):
            raise ValueError(f"no place for [{tid}] in week 12")
    # the rest over Monday..Friday, at most one more on a day than on any other
    if not _spread(w, witness, rest, workdays17, -(-len(rest) // len(workdays17))):
        raise ValueError("no even spread of week 17 under the rules")
    calls = [
        ToolCallSpec(
            tool="apply_proposal",
            args={"tasks": {"week": 17}, "slots": {"week": 12}, "max_moves": 2},
        ),
        ToolCallSpec(
            tool="apply_proposal",
            args={"tasks": {"week": 17}, "slots": {"week": 17, "day_scope": "workday"}},
        ),
    ]
    return _task(
        w,
        "42d-log-week17",
        "17周任务太多了，你帮我随便挪两个到第12周，然后再把第17周的任务限定在周一到周五均匀化",
        "local_adjust",
        calls,
        CalendarGoal(
            into=[
                Into(task_ids=piled, days=week12, count=2),
                Into(task_ids=piled, days=week12 + workdays17),
            ],
            unchanged=[t["state_id"] for t in data["tasks"] if t["state_id"] not in piled],
            even=Even(task_ids=piled, days=workdays17, max_gap=1),
        ),
        witness,
        spread_days=workdays17,  # "均匀化": week 17's workdays
    )


def calendar_tasks() -> list[EvalTask]:
    """The logged requests as tasks (deterministic: built from code, no solver)."""
    return [*weekend_tasks(), first_plan_no_early_or_late(), week17_to_week12_and_spread()]
