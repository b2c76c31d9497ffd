"""A planning window as a picture (matplotlib, the optional ``plot`` extra).

:func:`plot_window` draws the window as a days × periods grid (day 1 left, period 1 on top):

- courses in grey (locked ones with a heavy edge), water courses (embeddable) dashed, with
  their guests drawn inside them;
- study tasks coloured by category, existing ones solid, suggested ones hatched, locked ones
  with a heavy edge;
- free periods a task class bans inside its days (half-day blocks, single periods, weekdays:
  :attr:`~smartflow_engine.state.ScheduleState.class_rules`) crossed;
- days with a critical or warning issue of :func:`~smartflow_engine.analyzers.analyze_health`
  marked above the grid;

and under it the per-day load (courses + tasks, as a share of the day's periods) with the
warning and critical utilisation lines of the analyzers' threshold table.

Chinese names need a CJK font; the project's set-up installs one from a Debian package
(``fonts-wqy-microhei``). The first font with the glyphs is used (one installed after
matplotlib cached its font list is found too); a block then shows its task's name (and its id
on a second line when there is room). With none, the picture labels tasks by id and categories
by an English name (or ``cat. N``), so it never shows empty boxes. :func:`window_picture` is the
same content as data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .analyzers import analyze_health
from .files import atomic_path
from .rules import Level, threshold
from .state import ScheduleState

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")
_ENGLISH = {
    "课程": "course",
    "作业": "homework",
    "复习": "review",
    "项目": "project",
    "预习": "preview",
    "阅读": "reading",
    "考试": "exam",
    "实验": "lab",
    "未分类": "other",
}
_CJK_FAMILIES = (
    "Noto Sans CJK",
    "Noto Serif CJK",
    "Source Han",
    "WenQuanYi",
    "Droid Sans Fallback",
    "SimHei",
    "Microsoft YaHei",
    "PingFang",
    "Hiragino Sans GB",
    "Heiti",
    "AR PL",
    "Sarasa",
)
CATEGORY_PALETTE = (  # one colour per category, shared with the session page
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#b07aa1",
    "#edc948",
    "#76b7b2",
    "#ff9da7",
    "#9c755f",
    "#e15759",
    "#bab0ac",
)
NAME_CHARS = 5  # CJK characters that fit a day's column at the picture's font size
_COURSE = "#8c96a3"
_WATER = "#d9dde3"
_TASK_LOAD = "#3b5470"
_SEVERITY_COLOUR = {"critical": "#c0392b", "warning": "#e08e0b"}


# What a drawn block is: a course, an embeddable ("water") course, a study task, or a task
# embedded in a water course.
BlockKind = Literal["course", "water", "task", "guest"]


@dataclass(frozen=True)
class Block:
    """One drawn block: a task's periods on one day."""

    task_id: int
    day: int
    slot_start: int
    slot_end: int
    kind: BlockKind
    category: str
    status: str
    locked: bool
    name: str


@dataclass
class WindowPicture:
    """What :func:`plot_window` draws, as data."""

    num_days: int
    slots_per_day: int
    blocks: list[Block]
    banned: dict[tuple[int, int], list[str]]  # free (day, period) -> classes that ban it
    day_severity: dict[int, str]  # day -> "critical" | "warning"
    utilization: list[float]  # per day: occupied periods / periods of the day
    course_share: list[float]  # per day: course periods / periods of the day
    warning_line: float
    critical_line: float
    categories: list[str] = field(default_factory=list)


def window_picture(
    state: ScheduleState, *, level: Level = "normal", issues: bool = True
) -> WindowPicture:
    """Collect the grid, the banned free periods, the flagged days and the day loads."""
    spd = state.slots_per_day
    blocks: list[Block] = []
    occupied: set[tuple[int, int]] = set()
    for task in state.tasks:
        if not task.is_placed:
            continue
        course = task.source == "event"
        kind: BlockKind
        if task.embed_host is not None:
            kind = "guest"
        elif course:
            kind = "water" if task.can_embed else "course"
        else:
            kind = "task"
        for s in task.slots:
            blocks.append(
                Block(
                    task.state_id,
                    s.day,
                    s.slot_start,
                    s.slot_end,
                    kind,
                    task.category or "未分类",
                    task.status,
                    task.locked,
                    task.name,
                )
            )
            if kind != "guest":
                occupied.update((s.day, p) for p in range(s.slot_start, s.slot_end + 1))
    banned: dict[tuple[int, int], list[str]] = {}
    for rule in state.class_rules.all():
        allowed = rule.grid()
        for day in range(rule.first_day, rule.last_day + 1):
            for p in range(1, spd + 1):
                if not allowed[day - 1, p - 1] and (day, p) not in occupied:
                    banned.setdefault((day, p), []).append(rule.name)
    day_severity: dict[int, str] = {}
    if issues:
        health = analyze_health(state, threshold=level)
        for issue in health.issues:
            if issue.day is None or issue.severity not in _SEVERITY_COLOUR:
                continue
            if day_severity.get(issue.day) != "critical":
                day_severity[issue.day] = issue.severity
    used = [0] * state.num_days
    course_used = [0] * state.num_days
    for b in blocks:
        if b.kind == "guest":
            continue
        used[b.day - 1] += b.slot_end - b.slot_start + 1
        if b.kind in ("course", "water"):
            course_used[b.day - 1] += b.slot_end - b.slot_start + 1
    categories = sorted({b.category for b in blocks if b.kind in ("task", "guest")})
    return WindowPicture(
        num_days=state.num_days,
        slots_per_day=spd,
        blocks=blocks,
        banned=banned,
        day_severity=day_severity,
        utilization=[u / spd for u in used],
        course_share=[c / spd for c in course_used],
        warning_line=threshold("load", "day_utilization", "warning", "utilization", level),
        critical_line=threshold("load", "day_utilization", "critical", "utilization", level),
        categories=categories,
    )


# Font files of the Debian packages the project's set-up installs (fonts-wqy-microhei) or that
# are common (fonts-noto-cjk, fonts-wqy-zenhei, fonts-arphic-*), matched by file name.
_CJK_FILES = re.compile(r"(wqy|noto\w*cjk|sourcehan|droidsansfallback|uming|ukai)", re.I)


@cache
def cjk_font() -> str | None:
    """The family of an installed font with Chinese glyphs, or ``None``.

    matplotlib's font list is cached on disk when matplotlib first runs; a CJK font installed
    after that (``apt-get install fonts-wqy-microhei`` on a machine that already drew a
    picture) is not in it. So when the list has none, the system's font files are searched for
    CJK ones by name, added to the list, and probed.
    """
    from matplotlib import font_manager

    found = _probe(font_manager.fontManager.ttflist)
    if found is not None:
        return found
    known = {entry.fname for entry in font_manager.fontManager.ttflist}
    added = False
    for path in font_manager.findSystemFonts():
        if path not in known and _CJK_FILES.search(Path(path).name):
            try:
                font_manager.fontManager.addfont(path)
            except (OSError, RuntimeError, ValueError):
                continue
            added = True
    return _probe(font_manager.fontManager.ttflist) if added else None


def _probe(ttflist: list[Any]) -> str | None:
    from matplotlib.ft2font import FT2Font

    probe = [ord(c) for c in "课程作业复习"]
    entries = sorted(ttflist, key=lambda f: not any(f.name.startswith(n) for n in _CJK_FAMILIES))
    for entry in entries:
        if "Last Resort" in entry.name:  # matplotlib's own fallback: a box for every glyph
            continue
        try:
            charmap = FT2Font(entry.fname).get_charmap()
        except (OSError, RuntimeError):
            continue
        if all(code in charmap for code in probe):
            return str(entry.name)
    return None


def block_label(b: Block, cjk: bool) -> str:
    """A block's label: its name (up to :data:`NAME_CHARS` characters) when a CJK font draws it,
    with the task id on a second line when the block is two periods or taller; the id alone
    (``[11]``) without one (then the name would be empty boxes)."""
    name = _text(b.name, "", cjk)
    if not name:
        return f"[{b.task_id}]"
    short = name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"
    return f"{short}\n[{b.task_id}]" if b.slot_end > b.slot_start else short


def _text(value: str, fallback: str, cjk: bool) -> str:
    return value if cjk or not _CJK.search(value) else fallback


def plot_window(
    state: ScheduleState,
    *,
    title: str | None = None,
    level: Level = "normal",
    issues: bool = True,
    cjk: bool | None = None,
) -> Figure:
    """Draw the window (grid + day loads) and return the matplotlib figure.

    ``level`` is the analyzers' threshold level (``strict`` / ``normal`` / ``relaxed``) for the
    flagged days and the utilisation lines; ``cjk=None`` uses Chinese names when a CJK font is
    installed (``False`` forces ids and English labels).
    """
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle

    pic = window_picture(state, level=level, issues=issues)
    font = cjk_font() if cjk is not False else None
    use_cjk = font is not None
    families = [font, "DejaVu Sans"] if font else ["DejaVu Sans"]
    colour = {c: CATEGORY_PALETTE[i % len(CATEGORY_PALETTE)] for i, c in enumerate(pic.categories)}
    cat_label = {
        c: _text(c, _ENGLISH.get(c, f"cat. {i + 1}"), use_cjk) for i, c in enumerate(pic.categories)
    }
    D, S = pic.num_days, pic.slots_per_day

    with matplotlib.rc_context({"font.family": families}):
        width = min(4.0 + 0.62 * D, 40.0)
        fig = Figure(figsize=(width, 0.36 * S + 3.6), layout="constrained")
        grid_ax, load_ax = fig.subplots(
            2, 1, sharex=True, gridspec_kw={"height_ratios": [S * 0.36, 1.5]}
        )
        grid_ax.set_xlim(0.5, D + 0.5)
        grid_ax.set_ylim(S + 0.5, 0.5)
        for (day, p), _names in pic.banned.items():
            grid_ax.add_patch(
                Rectangle(
                    (day - 0.5, p - 0.5),
                    1,
                    1,
                    facecolor="#fbeaea",
                    edgecolor="#e7a9a9",
                    hatch="x",
                    linewidth=0,
                )
            )
        for b in pic.blocks:
            top, height = b.slot_start - 0.5, b.slot_end - b.slot_start + 1
            label = block_label(b, use_cjk)
            if b.kind == "guest":
                rect = Rectangle(
                    (b.day - 0.36, top + 0.12),
                    0.72,
                    height - 0.24,
                    facecolor=colour[b.category],
                    edgecolor="black",
                    linewidth=0.8,
                    hatch="///" if b.status == "suggested" else None,
                    alpha=0.95,
                )
            elif b.kind in ("course", "water"):
                rect = Rectangle(
                    (b.day - 0.46, top + 0.04),
                    0.92,
                    height - 0.08,
                    facecolor=_WATER if b.kind == "water" else _COURSE,
                    edgecolor="black" if b.locked else "#555555",
                    linewidth=1.6 if b.locked else 1.0,
                    linestyle="--" if b.kind == "water" else "-",
                )
            else:
                suggested = b.status == "suggested"
                rect = Rectangle(
                    (b.day - 0.46, top + 0.04),
                    0.92,
                    height - 0.08,
                    facecolor=colour[b.category],
                    alpha=0.55 if suggested else 0.95,
                    hatch="///" if suggested else None,
                    edgecolor="black" if b.locked else colour[b.category],
                    linewidth=1.6 if b.locked else 0.8,
                )
            grid_ax.add_patch(rect)
            if b.kind != "water" or not any(
                g.kind == "guest" and g.day == b.day and b.slot_start <= g.slot_start <= b.slot_end
                for g in pic.blocks
            ):
                grid_ax.text(
                    b.day,
                    top + height / 2,
                    label,
                    ha="center",
                    va="center",
                    fontsize=6.5,
                    clip_on=True,
                    color="white" if b.kind == "course" else "black",
                )
        grid_ax.set_yticks(range(1, S + 1))
        grid_ax.set_ylabel("period")
        grid_ax.set_xticks(range(1, D + 1))
        grid_ax.tick_params(axis="x", labelbottom=False, labeltop=True)
        for tick, day in zip(grid_ax.get_xticklabels(), range(1, D + 1), strict=False):
            sev = pic.day_severity.get(day)
            if sev:
                tick.set_color(_SEVERITY_COLOUR[sev])
                tick.set_fontweight("bold")
        for day, sev in pic.day_severity.items():
            grid_ax.axvspan(day - 0.5, day + 0.5, color=_SEVERITY_COLOUR[sev], alpha=0.07, zorder=0)
            grid_ax.plot(
                [day - 0.5, day + 0.5],
                [0.5, 0.5],
                color=_SEVERITY_COLOUR[sev],
                linewidth=5,
                solid_capstyle="butt",
                clip_on=False,
            )
        for x in range(1, D):
            grid_ax.axvline(x + 0.5, color="#e3e3e3", linewidth=0.6, zorder=0)
        for y in range(1, S):
            grid_ax.axhline(y + 0.5, color="#f0f0f0", linewidth=0.5, zorder=0)
        grid_ax.set_title(title or f"{D} days × {S} periods", loc="left")

        days = range(1, D + 1)
        load_ax.bar(days, pic.course_share, color=_COURSE, width=0.7, label="courses")
        load_ax.bar(
            days,
            [u - c for u, c in zip(pic.utilization, pic.course_share, strict=True)],
            bottom=pic.course_share,
            color=_TASK_LOAD,
            width=0.7,
            label="tasks",
        )
        load_ax.axhline(
            pic.warning_line,
            color=_SEVERITY_COLOUR["warning"],
            linestyle="--",
            linewidth=1.2,
            gid="warning_line",
        )
        load_ax.axhline(
            pic.critical_line,
            color=_SEVERITY_COLOUR["critical"],
            linestyle="--",
            linewidth=1.2,
            gid="critical_line",
        )
        load_ax.set_ylim(0, 1.05)
        load_ax.set_ylabel("day load")
        load_ax.set_xlabel("day")
        load_ax.set_xticks(list(days))
        load_ax.set_xticklabels([str(d) for d in days])

        handles: list[Any] = [
            Patch(facecolor=_COURSE, edgecolor="black", linewidth=1.6, label="course (locked)"),
            Patch(
                facecolor=_WATER,
                edgecolor="#555555",
                linestyle="--",
                label="water course (guests inside)",
            ),
            *[Patch(facecolor=colour[c], label=cat_label[c]) for c in pic.categories],
            Patch(facecolor="white", edgecolor="#444444", label="existing"),
            Patch(facecolor="white", edgecolor="#444444", hatch="///", label="suggested"),
            Patch(
                facecolor="#fbeaea",
                edgecolor="#e7a9a9",
                hatch="x",
                label="free, banned for a task class",
            ),
            Patch(facecolor=_COURSE, label="day load: courses"),
            Patch(facecolor=_TASK_LOAD, label="day load: tasks"),
            Line2D(
                [],
                [],
                color=_SEVERITY_COLOUR["warning"],
                linewidth=4,
                label=f"warning day / load ≥ {pic.warning_line:g}",
            ),
            Line2D(
                [],
                [],
                color=_SEVERITY_COLOUR["critical"],
                linewidth=4,
                label=f"critical day / load ≥ {pic.critical_line:g}",
            ),
        ]
        fig.legend(handles=handles, loc="outside right upper", fontsize=7, frameon=False)
    return fig


def save_window(state: ScheduleState, path: str | Path, *, dpi: int = 110, **kwargs: Any) -> Path:
    """Draw the window with :func:`plot_window` and write it (format from the suffix)."""
    path = Path(path)
    figure = plot_window(state, **kwargs)
    with atomic_path(path) as tmp:  # a kill mid-write leaves the old picture
        figure.savefig(tmp, dpi=dpi, format=path.suffix.lstrip(".") or None)
    return path
