"""Ordered subsets of views, the one home of what SART (and ASD-POCS's SART phase),
OSEM/MLEM and MLTR share: the partition into interleaved view subsets, per-subset
operators, data and cached normalisations, and the iteration × subset loop with its
progress bar, callback and stop. Each method supplies only its update of ``f`` from one
subset's projection, and its data fit."""
from __future__ import annotations

import numpy as np

from ._array import safe_reciprocal
from ._common import check_count
from ._monitor import IterationMonitor

# Per-subset sensitivities are kept when all of them fit in this many bytes, and
# recomputed each pass otherwise (one extra back-projection of the subset, as LEAP).
# One subset's is always kept: it is a single volume.
SENSITIVITY_CACHE_BYTES = 1 << 30


def num_subsets_for(op, num_subsets):
    """LEAP's rule: at most one subset per view, at least one subset."""
    m = check_count("num_subsets", num_subsets, 0)
    return max(1, min(m, op.num_views))


class OrderedSubsets:
    """``M`` interleaved view subsets of an operator (subset m: views m, m+M, …, as LEAP).

    ``ops[m]`` is subset m's operator (``op`` itself when M = 1). ``arrays`` maps names
    to projection arrays (or None); ``self[name][m]`` is subset m's C-contiguous float32
    copy (the array itself when M = 1). ``M`` must already be valid
    (:func:`num_subsets_for`).
    """

    def __init__(self, op, M, xp, **arrays):
        self.op = op
        self.xp = xp
        self.M = int(M)
        if self.M == 1:
            self.ops = [op]
            self._data = {k: [v] for k, v in arrays.items()}
        else:
            views = [slice(m, None, self.M) for m in range(self.M)]
            self.ops = [op.subset(v) for v in views]
            self._data = {k: [None if v is None else xp.ascontiguousarray(v[s], dtype=xp.float32)
                              for s in views] for k, v in arrays.items()}
        vol_bytes = 4 * int(np.prod(op.domain_shape))
        self._cache_ok = self.M == 1 or self.M * vol_bytes <= SENSITIVITY_CACHE_BYTES
        self._sens = {}

    def __getitem__(self, name):
        return self._data[name]

    def inverse_sensitivity(self, m, weights=None):
        """``1 / P_mᵀ w`` (entries ≤ 0 → 1), ``w`` = 1 or a subset projection array (the
        same one on every call for this m: the result is cached)."""
        if m in self._sens:
            return self._sens[m]
        xp = self.xp
        op = self.ops[m]
        w = xp.ones(op.range_shape, dtype=xp.float32) if weights is None else weights
        s = safe_reciprocal(op.adjoint(xp.ascontiguousarray(w, dtype=xp.float32)), xp)
        if self._cache_ok:
            self._sens[m] = s
        return s

    def sweep(self, f, update, Pf=None):
        """One pass over the subsets in order: ``update(f, m, P_m f)`` for m = 0 … M−1,
        each with the projection of ``f`` as the previous update left it. ``Pf``, the
        projection of the current ``f`` when the caller has it, saves the projection with
        one subset. ``update`` changes ``f`` in place and must not keep ``P_m f``."""
        if Pf is not None and self.M == 1:
            update(f, 0, Pf)
            return
        for m, op_m in enumerate(self.ops):
            update(f, m, op_m.forward(f))

    def run(self, f, num_iter, update, data_fit, *, name, progress, callback):
        """``num_iter`` :meth:`sweep` passes of ``update`` on ``f`` (in place); after each,
        ``data_fit(P f)`` (a float) goes to the progress bar and to ``callback``
        (:class:`IterationMonitor`), which may stop the run.

        With one subset the projection taken for the data fit serves the next update:
        one projection per iteration, the data fit for free. With subsets each update
        projects its own views, and the data fit costs one more projection of all views,
        made only for a callback.
        """
        Pf = self.op.forward(f) if self.M == 1 else None
        with IterationMonitor(name, num_iter, progress, callback) as mon:
            for n in range(num_iter):
                self.sweep(f, update, Pf)
                if Pf is not None:
                    self.op.forward(f, out=Pf)
                    fit = data_fit(Pf)
                else:
                    fit = data_fit(self.op.forward(f)) if mon.wants_data_fit else None
                if mon.step(n + 1, f, fit):
                    break
        return f
