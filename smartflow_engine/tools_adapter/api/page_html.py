"""The session page as HTML: server-rendered from a :class:`~.page_view.PageView`, with one CSS
and one vanilla-JS file served by the app (:data:`ASSETS`): no CDN, no build step.

The grid is a CSS grid: one ``div.cell`` per (day, period) and one ``div.block`` per placed
block, positioned by ``grid-column`` / ``grid-row``. Every text from the state (task names,
categories) is escaped; the round log's data for the JavaScript (round details, the difference
between two rounds) travels in a ``<script type="application/json">`` with ``<`` escaped.
"""

from __future__ import annotations

import base64
import hashlib
import json
from functools import cache
from html import escape
from importlib import resources
from typing import Any

from ...plot import CATEGORY_PALETTE
from ..core.render import gap_words
from .page_view import PageView, RoundView, WriteView, worst

ASSETS = "/static/page"
PALETTE = CATEGORY_PALETTE  # the picture's colours: a category looks the same in both
_STATUS = {"existing": "已安排", "suggested": "已预排", "pending": "待安排"}
_KIND = {"course": "课程", "water": "水课（可嵌入）", "task": "学习任务", "guest": "嵌入的任务"}
_SEVERITY = {"critical": "严重", "warning": "警告", "info": "提示"}


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _key(key: tuple[int, int, float] | None) -> str:
    return "—" if key is None else f"严重 {key[0]} · 警告 {key[1]} · 影响 {key[2]:g}"


def _grid(view: PageView) -> str:
    D, S = view.num_days, view.slots_per_day
    if D == 0:
        return '<p class="empty">未加载日程。</p>'
    colour = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(view.categories)}
    day_sev = view.day_severity()
    day_count: dict[int, int] = {}
    for issue in view.issues:
        if issue.day is not None:
            day_count[issue.day] = day_count.get(issue.day, 0) + 1
    cat_issues = view.category_issues()
    frozen = view.frozen_days
    parts = [
        f'<div class="grid" id="grid" style="--days:{D};--slots:{S}" data-days="{D}"'
        f' data-slots="{S}" data-frozen-days="{frozen}">'
    ]
    parts.append('<div class="corner">节次</div>')
    for day in range(1, D + 1):
        sev = day_sev.get(day)
        cls = "dayhead" + (f" sev-{sev}" if sev else "") + (" frozen" if day <= frozen else "")
        badge = (
            f'<i class="issue-count" title="本日健康问题 {day_count[day]} 个">{day_count[day]}</i>'
            if day in day_count
            else ""
        )
        ice = (
            '<i class="frozen-tag" title="冻结日：不移动、不放入">冻结</i>' if day <= frozen else ""
        )
        parts.append(
            f'<div class="{cls}" style="grid-column:{day + 1};grid-row:1" data-day="{day}">'
            f"<b>{day}{badge}{ice}</b><span>{_e(view.day_labels[day - 1])}</span></div>"
        )
    for slot in range(1, S + 1):
        parts.append(f'<div class="slothead" style="grid-row:{slot + 1}">{slot}</div>')
    for day in range(1, D + 1):
        sev = day_sev.get(day)
        for slot in range(1, S + 1):
            cls = "cell"
            title = ""
            if sev:
                cls += f" sev-{sev}"
            if day <= frozen:
                cls += " frozen"
            banned = view.banned.get((day, slot))
            if banned:
                cls += " banned"
                title = f' title="禁排：{_e("、".join(banned))}"'
            parts.append(
                f'<div class="{cls}" style="grid-column:{day + 1};grid-row:{slot + 1}"'
                f' data-day="{day}" data-slot="{slot}"{title}></div>'
            )
    for b in view.blocks:
        classes = ["block", f"kind-{b.kind}", f"status-{b.status}"]
        if b.locked:
            classes.append("locked")
        if b.day <= frozen:
            classes.append("frozen")
        style = f"grid-column:{b.day + 1};grid-row:{b.slot_start + 1} / {b.slot_end + 2}"
        if b.kind in ("task", "guest"):
            style += f";--c:{colour.get(b.category, '#888')}"
        flagged = cat_issues.get(b.category) if b.kind in ("task", "guest") else None
        if flagged:
            classes.append(f"issue-{worst(flagged)}")
        tip = [
            f"[{b.task_id}] {b.name}",
            f"{_KIND.get(b.kind, b.kind)} · {b.category} · {_STATUS.get(b.status, b.status)}",
            f"第{b.day}天 第{b.slot_start}-{b.slot_end}节"
            + (" · 锁定" if b.locked else "")
            + (" · 冻结日" if b.day <= frozen else ""),
            *[f"{_SEVERITY.get(i.severity, i.severity)}：{i.text}" for i in flagged or ()],
        ]
        marks = ""
        if b.locked:
            marks += '<i class="mark lock" title="锁定">锁</i>'
        if b.status == "suggested":
            marks += '<i class="mark" title="已预排">✦</i>'
        parts.append(
            f'<div class="{" ".join(classes)}" style="{style}" data-task-id="{b.task_id}"'
            f' data-kind="{b.kind}" data-category="{_e(b.category)}" data-status="{b.status}"'
            f' data-day="{b.day}" title="{_e(chr(10).join(tip))}">'
            f'<span class="name">{marks}{_e(b.name)}</span></div>'
        )
    parts.append("</div>")
    return "".join(parts)


def _legend(view: PageView) -> str:
    colour = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(view.categories)}
    items = [
        '<span class="chip kind-course">课程</span>',
        '<span class="chip kind-water">水课（可嵌入）</span>',
        *[
            f'<span class="chip kind-task" style="--c:{colour[c]}">{_e(c)}</span>'
            for c in view.categories
        ],
        '<span class="chip status-suggested kind-task" style="--c:#999">✦ 已预排</span>',
        '<span class="chip locked kind-task" style="--c:#999">锁定</span>',
        '<span class="chip banned">禁排</span>',
        '<span class="chip sev-info">提示</span>',
        '<span class="chip sev-warning">警告</span>',
        '<span class="chip sev-critical">严重</span>',
    ]
    if view.frozen_days:
        items.append(f'<span class="chip frozen">冻结：第1-{view.frozen_days}天</span>')
    return f'<div class="legend">{"".join(items)}</div>'


def _close(view: PageView) -> str:
    sig = view.close_signal
    if not sig:
        return ""
    floor = sig.get("floor") or {}
    rows = [
        ("可收口", "是" if sig.get("acceptable_to_close") else "否"),
        ("严重 / 警告", f"{sig.get('critical')} / {sig.get('warning')}"),
        ("原因", sig.get("reason")),
        (
            "下界（floor）",
            f"严重 {floor.get('critical')} / 警告 {floor.get('warning')}"
            + ("（已证明）" if floor.get("proven") else "（未证明）"),
        ),
        ("已是最好", "是" if sig.get("best_achievable") else "否"),
    ]
    if "round" in sig:
        rows += [
            ("轮次", sig.get("round")),
            ("连续无进展轮数", sig.get("rounds_without_progress")),
            ("收口原因", sig.get("close_reason") or "—"),
        ]
    feas = view.feasibility
    if feas is not None:
        word = {True: "可行", False: "不可行", None: "未定"}.get(feas.get("is_feasible"), "未定")
        rows.append(
            (
                "可行性",
                f"{word}（缺口 {gap_words(feas.get('capacity_gap'), feas.get('capacity_gap_bounds'))}"
                f"，{feas.get('reason_code')}）",
            )
        )
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    ok = "ok" if sig.get("acceptable_to_close") else "open"
    return (
        f'<section class="close {ok}" id="close"><h2>收口信号</h2><table>{body}</table></section>'
    )


def _issues(view: PageView) -> str:
    if not view.issues:
        return '<section id="issues"><h2>健康问题</h2><p>无。</p></section>'
    items = []
    for i in view.issues:
        where = (
            "grid"
            if i.day is not None or i.category in view.categories
            else "window"  # a whole-window issue: nothing to point at in the grid
        )
        items.append(
            f'<li class="issue sev-{_e(i.severity)}" data-issue-id="{_e(i.issue_id)}"'
            f' data-day="{i.day or ""}" data-category="{_e(i.category or "")}"'
            f' data-where="{where}" tabindex="0">'
            f"<b>{_e(_SEVERITY.get(i.severity, i.severity))}</b> <code>{_e(i.issue_id)}</code>"
            f" {_e(i.text)}</li>"
        )
    return (
        '<section id="issues"><h2>健康问题</h2>'
        '<p class="hint">问题画在它所在的日（列头的数字）和科目（色块的描边）上；'
        "点击一条问题，在日程中标出它。</p>"
        f'<ul class="issues">{"".join(items)}</ul></section>'
    )


def _pending_tasks(view: PageView) -> str:
    if not view.pending_tasks:
        return ""
    items = "".join(
        f'<li data-task-id="{t["task_id"]}">[{t["task_id"]}] {_e(t["name"])}'
        f" <small>{_e(t['category'])} · {t['duration']} 节</small></li>"
        for t in view.pending_tasks
    )
    return f'<section id="pending-tasks"><h2>待安排任务</h2><ul>{items}</ul></section>'


def _moves(w: WriteView) -> str:
    if w.moves is None:
        return '<div class="moves unknown">改动已提交或不在变更记录中。</div>'
    rows = "".join(
        f'<li data-task-id="{m.task_id}">[{m.task_id}] {_e(m.name)}：{_e(m.before)} → {_e(m.after)}</li>'
        for m in w.moves
    )
    return f'<ul class="moves">{rows}</ul>'


def _round(r: RoundView) -> str:
    worked = r.worked_on or {}
    writes = "".join(
        f'<li class="write"><code>{_e(w.tool)}</code>'
        + (f" · 行动 {_e(w.action_id)}" if w.action_id else "")
        + f" · {w.changes} 处变更"
        + (f'<div class="evidence">{_e(w.evidence)}</div>' if w.evidence else "")
        + _moves(w)
        + "</li>"
        for w in r.writes
    )
    if r.writes_omitted:
        writes = (
            f'<li class="write omitted">（更早的 {r.writes_omitted} 次写入只计数）</li>' + writes
        )
    detail = (
        f'<div class="round-detail" hidden>'
        f"<p>模式：{_e(r.mode or '—')}</p>"
        f"<p>本轮体检：{_e(_key(r.key_before))}</p>"
        f"<p>写入后（下一轮体检）：{_e(_key(r.key_after))}</p>"
        f"<p>处理的行动：{_e(worked.get('action_id') or '—')}"
        + (f"（{_e(worked.get('intent_code'))}）" if worked.get("intent_code") else "")
        + "</p>"
        f"<p>给出的行动：{_e('、'.join(r.actions) or '—')}</p>"
        f"<p>问题：{_e('、'.join(r.issue_ids) or '无')}</p>"
        f'<ul class="writes">{writes or "<li>本轮没有写入。</li>"}</ul></div>'
    )
    tag = f"第 {r.round} 轮" if r.round else "第 0 轮（首次体检前）"
    flags = ("✓ 进展" if r.progress else "") + (
        f" · 收口：{r.close_reason}" if r.close_reason else ""
    )
    return (
        f'<li class="round" data-round="{r.round}" tabindex="0">'
        f'<div class="round-head"><b>{tag}</b> <span>{_e(r.mode or "")}</span>'
        f" <span>{_e(_key(r.key_before))}</span> <span>{len(r.writes)} 次写入</span>"
        f" <span>{_e(flags)}</span></div>{detail}</li>"
    )


def _rounds(view: PageView) -> str:
    if view.session_id is None:
        return ""
    if not view.rounds:
        return '<section id="rounds"><h2>轮次记录</h2><p>还没有轮次。</p></section>'
    items = "".join(_round(r) for r in view.rounds)
    options = "".join(f'<option value="{r.round}">第 {r.round} 轮</option>' for r in view.rounds)
    last = view.rounds[-1].round
    return (
        '<section id="rounds"><h2>轮次记录</h2><p class="hint">点击一轮查看其写入和证据。</p>'
        f'<ol class="rounds">{items}</ol>'
        '<div class="diff"><h3>两轮之差</h3>'
        f'<label>从 <select id="diff-a">{options}</select></label> '
        f'<label>到 <select id="diff-b" data-last="{last}">{options}</select></label>'
        '<div id="diff-out"></div></div></section>'
    )


def _pending(view: PageView) -> str:
    if view.session_id is None:
        return ""
    if not view.pending:
        body = "<p>没有待确认的调用。</p>"
    else:
        body = "".join(
            f'<div class="pending-call"><code>{_e(p.tool)}</code><pre>{_e(p.preview)}</pre></div>'
            for p in view.pending
        )
    return (
        f'<section id="pending"><h2>待确认（提交预览）</h2>'
        f"<p>未提交的变更：{view.change_count} 条</p>{body}</section>"
    )


def _data(view: PageView) -> str:
    rounds = [
        {
            "round": r.round,
            "mode": r.mode,
            "key_before": r.key_before,
            "key_after": r.key_after,
            "issue_ids": r.issue_ids,
            "writes_omitted": r.writes_omitted,
            "writes": [
                {
                    "tool": w.tool,
                    "action_id": w.action_id,
                    "evidence": w.evidence,
                    "moves": None
                    if w.moves is None
                    else [
                        {"task_id": m.task_id, "name": m.name, "before": m.before, "after": m.after}
                        for m in w.moves
                    ],
                }
                for w in r.writes
            ],
        }
        for r in view.rounds
    ]
    text = json.dumps({"rounds": rounds}, ensure_ascii=False).replace("<", "\\u003c")
    return f'<script type="application/json" id="page-data">{text}</script>'


@cache
def asset_text(name: str) -> str:
    """The text of one of the page's packaged assets (``page.css``, ``page.js``)."""
    return (
        resources.files("smartflow_engine") / "tools_adapter" / "api" / "static" / name
    ).read_text(encoding="utf-8")


@cache
def inline_script_hash() -> str:
    """The CSP source (``'sha256-…'``) that lets the inlined ``page.js`` run, and nothing else."""
    digest = hashlib.sha256(asset_text("page.js").encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"


def render_page(view: PageView, *, inline: bool = False) -> str:
    """The whole HTML document. ``inline``: the stylesheet and the script are written into the
    document itself, so it needs no further request and shows the same wherever it is put (a
    backend's ``iframe srcdoc``, a saved file, a proxied response): the stateless page."""
    head = view.title or "规划窗口"
    meta = [f"{view.num_days} 天 × {view.slots_per_day} 节", f"阈值：{view.level}"]
    if view.mode:
        meta.insert(0, f"模式：{view.mode}")
    if view.frozen_days:
        meta.append(f"冻结：第1-{view.frozen_days}天")
    if inline:
        style = f"<style>{asset_text('page.css')}</style>"
        script = f"<script>{asset_text('page.js')}</script>"
    else:
        style = f'<link rel="stylesheet" href="{ASSETS}/page.css">'
        script = f'<script src="{ASSETS}/page.js"></script>'
    return (
        '<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{_e(head)} · smartflow</title>{style}</head><body>"
        f'<header><h1>{_e(head)}</h1><p class="meta">{_e(" · ".join(meta))}</p></header>'
        f"<main>{_close(view)}"
        f'<section id="window"><h2>日程</h2>{_legend(view)}<div class="scroll">{_grid(view)}</div></section>'
        f"{_issues(view)}{_pending_tasks(view)}{_rounds(view)}{_pending(view)}</main>"
        f"{_data(view)}{script}</body></html>"
    )


def render_message(title: str, message: str) -> str:
    """A small page for a refused view (expired link, unknown session)."""
    return (
        '<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8">'
        f'<title>{_e(title)}</title><link rel="stylesheet" href="{ASSETS}/page.css"></head>'
        f'<body><main><h1>{_e(title)}</h1><p class="message">{_e(message)}</p></main></body></html>'
    )
