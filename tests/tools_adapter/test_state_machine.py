"""Property test: random sequences of valid and invalid write calls keep every invariant."""

from __future__ import annotations

import os
import re

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.state.strategies import windows, write_calls

_FAILED = ("失败", "参数错误", "未知工具")


def _refused(reply: str) -> bool:
    first = reply.splitlines()[0] if reply else ""
    return any(word in first for word in _FAILED)


class ToolMachine(RuleBasedStateMachine):
    """Drives the write tools and checks the spec's invariants after every step."""

    @initialize(state=windows(min_days=3, max_days=14, pending_per_day=1.5))
    def load(self, state: ScheduleState) -> None:
        self.tb = Toolbox(state, self_check=True)
        self.locked = {
            t.state_id: [b.model_dump() for b in t.slots] for t in state.tasks if state.is_locked(t)
        }

    @rule(data=st.data())
    def call(self, data: st.DataObject) -> None:
        state = self.tb.state
        name, args = data.draw(write_calls(state))
        before = state.to_json()
        log_len = len(self.tb.changes)
        reply = self.tb.call(name, args)
        assert isinstance(reply, str) and reply
        if _refused(reply):
            # after any refusal the state equals its snapshot, nothing is logged
            assert state.to_json() == before, reply
            assert len(self.tb.changes) == log_len
        else:
            assert len(self.tb.changes) > log_len, reply
            self._check_reply_counts(reply)

    def _check_reply_counts(self, reply: str) -> None:
        state = self.tb.state
        loads = state.grid.day_load()
        for day, used in re.findall(r"第(\d+)天当前占用：.*?(\d+)/\d+。", reply):
            assert loads[int(day) - 1] == int(used), reply
        for left in re.findall(r"待安排任务剩余：(\d+)个", reply):
            assert int(left) == len(state.pending_tasks()), reply

    @invariant()
    def no_shared_periods(self) -> None:
        state = self.tb.state
        seen: dict[tuple[int, int], int] = {}
        for t in state.tasks:
            if t.embed_host is not None:
                continue
            for b in t.slots:
                for s in range(b.slot_start, b.slot_end + 1):
                    assert (b.day, s) not in seen, (t.state_id, seen[(b.day, s)], b)
                    seen[(b.day, s)] = t.state_id

    @invariant()
    def guests_inside_one_embeddable_block(self) -> None:
        state = self.tb.state
        used: set[tuple[int, int, int]] = set()
        for t in state.tasks:
            if t.embed_host is None:
                continue
            host = state.task(t.embed_host)
            assert host is not None and host.can_embed
            (g,) = t.slots
            blocks = [
                b
                for b in host.slots
                if b.day == g.day and b.slot_start <= g.slot_start and g.slot_end <= b.slot_end
            ]
            assert len(blocks) == 1
            key = (host.state_id, g.day, blocks[0].slot_start)
            assert key not in used
            used.add(key)

    @invariant()
    def locked_tasks_never_move(self) -> None:
        state = self.tb.state
        for tid, slots in self.locked.items():
            assert [b.model_dump() for b in state.task(tid).slots] == slots

    @invariant()
    def pending_tasks_hold_no_slots(self) -> None:
        for t in self.tb.state.tasks:
            assert (t.status == "pending") == (not t.slots)
            if t.status == "pending":
                assert t.duration and t.embed_host is None


# SMARTFLOW_SM_EXAMPLES=2000 for a long local run; CI keeps it short.
ToolMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("SMARTFLOW_SM_EXAMPLES", "40")),
    stateful_step_count=30,
    deadline=None,
)
TestToolMachine = ToolMachine.TestCase
