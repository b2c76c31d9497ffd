"""The compiled loops of the column generation (numba; :mod:`.pricing` and :mod:`.master` call
them): the one-day pricing programme, the programme over days of the decomposition bound, and the
Lagrangian bound of every free total.

They are loops over small arrays: in numpy each step would be a call that may release the
interpreter lock, and on a busy interpreter every release can cost a full switch interval.

Imported lazily (numba takes ~0.25 s to import and compiles on first use; ``cache=True`` keeps
the machine code next to this file, so later processes only load it). Every kernel releases the
interpreter lock (``nogil``), so a server thread running one never blocks the others, and the
two loops over free totals take a work cap (``max_ops``) so that a caller with a deadline can
cut them (issue 12).

The programme runs over a day's free runs, then its host blocks. Its value array is indexed by
(position, cell state, subject mask, free periods filled): a position is a cell of a run (or the
cell after the run's end), the cell state is the previous cell's (see ``FREE_CAND`` ... ``OCC``
in :mod:`._cells`), the mask holds the subjects whose first task of the day has been placed
(for the same-category term), and the last axis counts the free periods filled (for the load
term). Every improvement records its predecessor, so a filling is traced back without floating
point comparisons. Ties keep the first value found, which makes the result deterministic.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._cells import FREE_CAND, FREE_OK, OCC, OCC_NONE


@njit(cache=True, nogil=True)
def day_kernel(
    num_subjects: int,
    num_masks: int,
    width: int,
    w_iso: float,
    w_sw: float,
    first_bit: np.ndarray,  # (subjects,) mask bit of the subject's first-use change, or -1
    first_change: np.ndarray,  # (subjects,) cost change of its first task of the day
    run_a: np.ndarray,  # (runs,) first period
    run_e: np.ndarray,  # (runs,) last period
    run_left: np.ndarray,  # (runs,) state of the cell left of the run
    run_right: np.ndarray,  # (runs,) subject right of the run, or -1
    run_off: np.ndarray,  # (runs + 1,) first position of each run
    opt_lo: np.ndarray,  # (positions,) options starting at a position: opt_lo..opt_hi
    opt_hi: np.ndarray,
    opt_k: np.ndarray,  # (options,) subject
    opt_len: np.ndarray,  # (options,) periods
    opt_cost: np.ndarray,  # (options,) reduced cost
    hopt_lo: np.ndarray,  # (hosts,) guest options of a host block: hopt_lo..hopt_hi
    hopt_hi: np.ndarray,
    hopt_k: np.ndarray,  # (guest options,) subject
    hopt_cost: np.ndarray,  # (guest options,) reduced cost
) -> tuple[
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    int,
]:
    inf = np.inf
    num_states = OCC + num_subjects
    num_runs = run_a.shape[0]
    num_hosts = hopt_lo.shape[0]
    positions = run_off[num_runs]
    value = np.full((positions, num_states, num_masks, width), inf)
    p_state = np.full((positions, num_states, num_masks, width), -1, dtype=np.int32)
    p_mask = np.full((positions, num_states, num_masks, width), -1, dtype=np.int32)
    p_how = np.full((positions, num_states, num_masks, width), -3, dtype=np.int32)
    run_end_state = np.full((num_runs, num_masks, width), -1, dtype=np.int32)
    cur = np.full((num_masks, width), inf)
    cur[0, 0] = 0.0
    best = np.empty((num_subjects, num_masks, width))
    best_state = np.empty((num_subjects, num_masks, width), dtype=np.int32)
    ops = 0
    for r in range(num_runs):
        a = run_a[r]
        e = run_e[r]
        off = run_off[r]
        left = run_left[r]
        for m in range(num_masks):
            for n in range(width):
                value[off, left, m, n] = cur[m, n]
                p_how[off, left, m, n] = -2  # entry: the previous run's end
        for q in range(a, e + 1):
            i = off + q - a
            ops += num_states * num_masks
            for s in range(num_states):
                ns = FREE_OK if s <= FREE_OK else FREE_CAND
                for m in range(num_masks):
                    for n in range(width):
                        v = value[i, s, m, n]
                        if v < value[i + 1, ns, m, n]:
                            value[i + 1, ns, m, n] = v
                            p_state[i + 1, ns, m, n] = s
                            p_mask[i + 1, ns, m, n] = m
                            p_how[i + 1, ns, m, n] = -1
            if opt_lo[i] == opt_hi[i]:
                continue
            # The best predecessor of a task of each subject: free or neutral cells cost
            # nothing (a free candidate pays its isolation), another subject pays a switch.
            ops += num_subjects * num_masks
            for m in range(num_masks):
                for n in range(width):
                    b = value[i, FREE_OK, m, n]
                    bs = FREE_OK
                    if value[i, OCC_NONE, m, n] < b:
                        b = value[i, OCC_NONE, m, n]
                        bs = OCC_NONE
                    if value[i, FREE_CAND, m, n] + w_iso < b:
                        b = value[i, FREE_CAND, m, n] + w_iso
                        bs = FREE_CAND
                    m1 = inf
                    a1 = -1
                    m2 = inf
                    a2 = -1
                    for k in range(num_subjects):
                        v = value[i, OCC + k, m, n]
                        if v < m1:
                            m2 = m1
                            a2 = a1
                            m1 = v
                            a1 = k
                        elif v < m2:
                            m2 = v
                            a2 = k
                    for k in range(num_subjects):
                        bk = b
                        bsk = bs
                        v = value[i, OCC + k, m, n]
                        if v < bk:
                            bk = v
                            bsk = OCC + k
                        if a1 != k:
                            ov = m1 + w_sw
                            os_ = OCC + a1
                        else:
                            ov = m2 + w_sw
                            os_ = OCC + a2
                        if ov < bk:
                            bk = ov
                            bsk = os_
                        best[k, m, n] = bk
                        best_state[k, m, n] = bsk
            for o in range(opt_lo[i], opt_hi[i]):
                k = opt_k[o]
                length = opt_len[o]
                if q + length - 1 > e:
                    continue
                c = opt_cost[o]
                j = i + length
                ts = OCC + k
                ops += num_masks
                for m in range(num_masks):
                    m_to, change = _after_task(m, first_bit[k], first_change[k])
                    for n in range(width - length):
                        v = best[k, m, n]
                        if v == inf:
                            continue
                        nv = v + c + change
                        if nv < value[j, ts, m_to, n + length]:
                            value[j, ts, m_to, n + length] = nv
                            p_state[j, ts, m_to, n + length] = best_state[k, m, n]
                            p_mask[j, ts, m_to, n + length] = m
                            p_how[j, ts, m_to, n + length] = o
        end = off + e - a + 1
        right = run_right[r]
        ops += num_states * num_masks
        for m in range(num_masks):
            for n in range(width):
                cur[m, n] = inf
                for s in range(num_states):
                    close = 0.0
                    if s == FREE_CAND:
                        close = w_iso
                    elif s >= OCC and right >= 0 and s - OCC != right:
                        close = w_sw
                    v = value[end, s, m, n] + close
                    if v < cur[m, n]:
                        cur[m, n] = v
                        run_end_state[r, m, n] = s
    host_value = np.empty((num_hosts + 1, num_masks, width))
    host_choice = np.full((num_hosts, num_masks, width), -1, dtype=np.int32)
    host_mask = np.full((num_hosts, num_masks, width), -1, dtype=np.int32)
    host_value[0] = cur
    for h in range(num_hosts):
        host_value[h + 1] = host_value[h]
        for m in range(num_masks):
            for n in range(width):
                host_mask[h, m, n] = m
        for o in range(hopt_lo[h], hopt_hi[h]):
            k = hopt_k[o]
            c = hopt_cost[o]
            ops += num_masks
            for m in range(num_masks):
                m_to, change = _after_task(m, first_bit[k], first_change[k])
                for n in range(width):
                    v = host_value[h, m, n]
                    if v == inf:
                        continue
                    nv = v + c + change
                    if nv < host_value[h + 1, m_to, n]:
                        host_value[h + 1, m_to, n] = nv
                        host_choice[h, m_to, n] = o
                        host_mask[h, m_to, n] = m
    return (value, p_state, p_mask, p_how, run_end_state, host_value, host_choice, host_mask, ops)


@njit(cache=True, nogil=True)
def _after_task(mask: int, bit: int, change: float) -> tuple[int, float]:
    """The subject mask after one more task of a subject, and the cost change it brings: its
    first-use change when its bit was not set yet (``bit`` -1: a subject without one)."""
    if bit >= 0 and (mask >> bit) & 1 == 0:
        return mask | (1 << bit), change
    return mask, 0.0


@njit(cache=True, nogil=True)
def totals_kernel(
    cost: np.ndarray, fixed: np.ndarray, totals: np.ndarray, w_load: float, max_ops: int
) -> tuple[np.ndarray, int]:
    """Per total ``T``: min Σ_d cost[d, n_d] + w_load·|fixed_d + n_d − mean_T| over Σ n_d = T
    (``inf`` where no split exists); ``cost[d, n]`` is ``inf`` where day ``d`` cannot take
    ``n`` free periods.

    Work cap: stops once ``max_ops`` inner steps are spent and returns how many totals (from
    the first) were computed; the others are left ``inf`` and must not be used."""
    num_days, width = cost.shape
    out = np.full(totals.shape[0], np.inf)
    fixed_sum = 0.0
    ops = 0
    for d in range(num_days):
        fixed_sum += fixed[d]
    for i in range(totals.shape[0]):
        total = totals[i]
        mean = (fixed_sum + total) / num_days
        best = np.full(total + 1, np.inf)
        best[0] = 0.0
        nxt = np.empty(total + 1)
        for d in range(num_days):
            ops += width * (total + 1)
            if ops > max_ops:
                return out, i
            nxt[:] = np.inf
            for k in range(min(width, total + 1)):
                c = cost[d, k]
                if c == np.inf:
                    continue
                c += w_load * abs(fixed[d] + k - mean)
                for t in range(total + 1 - k):
                    v = best[t] + c
                    if v < nxt[t + k]:
                        nxt[t + k] = v
            best, nxt = nxt, best
        out[i] = best[total]
    return out, totals.shape[0]


@njit(cache=True, nogil=True)
def lagrange_kernel(
    table: np.ndarray,
    days: np.ndarray,
    rep_fixed: np.ndarray,
    fixed_sum: float,
    num_days: int,
    w_load: float,
    base: float,
    totals: np.ndarray,
    max_ops: int,
) -> np.ndarray:
    """Per total ``T``: max over ``ν`` of
    ``base + ν·T + Σ_i days_i · min_n (table[i, n] + w_load·|rep_fixed_i + n − mean_T| − ν·n)``
    by ternary search (concave in ``ν``; any ``ν`` gives a valid bound, the search only makes
    it tight). Work cap: totals left once ``max_ops`` steps are spent stay ``-inf``."""
    types, width = table.shape
    out = np.full(totals.shape[0], -np.inf)
    shifted = np.empty((types, width))
    ops = 0
    for i in range(totals.shape[0]):
        ops += 201 * types * width
        if ops > max_ops:
            break
        total = totals[i]
        mean = (fixed_sum + total) / num_days
        lo_v = np.inf
        hi_v = -np.inf
        for r in range(types):
            for n in range(width):
                v = table[r, n] + w_load * abs(rep_fixed[r] + n - mean)
                shifted[r, n] = v
                if v < np.inf:
                    lo_v = min(lo_v, v)
                    hi_v = max(hi_v, v)
        if lo_v == np.inf:
            continue
        span = hi_v - lo_v + 1.0
        lo = -span
        hi = span
        for _ in range(100):
            a = lo + (hi - lo) / 3
            b = hi - (hi - lo) / 3
            if _lagrange_value(shifted, days, base, total, a) < _lagrange_value(
                shifted, days, base, total, b
            ):
                lo = a
            else:
                hi = b
        out[i] = max(
            _lagrange_value(shifted, days, base, total, lo),
            _lagrange_value(shifted, days, base, total, 0.0),
        )
    return out


@njit(cache=True, nogil=True)
def _lagrange_value(
    shifted: np.ndarray, days: np.ndarray, base: float, total: int, nu: float
) -> float:
    types, width = shifted.shape
    value = base + nu * total
    for r in range(types):
        inner = np.inf
        for n in range(width):
            v = shifted[r, n] - nu * n
            if v < inner:
                inner = v
        value += days[r] * inner
    return value


def warm_up() -> None:
    """Compile the kernel (or load it from numba's cache) outside any timed search.

    The first call after installation compiles it (seconds, once); later processes load the
    cached machine code in milliseconds. Callers with a time limit call this before starting
    their clock, so the limit measures the search, not the compiler.
    """
    ints = np.zeros(1, dtype=np.int64)
    one = np.ones(1, dtype=np.int64)
    day_kernel(
        1,
        1,
        2,
        1.0,
        1.0,
        np.full(1, -1, dtype=np.int64),
        np.zeros(1),
        one,
        one,
        np.full(1, OCC_NONE, dtype=np.int64),
        np.full(1, -1, dtype=np.int64),
        np.array([0, 2], dtype=np.int64),
        np.zeros(2, dtype=np.int64),
        np.array([0, 0], dtype=np.int64),
        ints,
        one,
        np.zeros(1),
        np.zeros(0, dtype=np.int64),
        np.zeros(0, dtype=np.int64),
        np.zeros(0, dtype=np.int64),
        np.zeros(0),
    )
    totals_kernel(np.zeros((1, 2)), np.zeros(1), np.zeros(1, dtype=np.int64), 1.0, 10**6)
    lagrange_kernel(
        np.zeros((1, 2)),
        np.ones(1),
        np.zeros(1),
        0.0,
        1,
        1.0,
        0.0,
        np.zeros(1, dtype=np.int64),
        10**6,
    )
