"""Ordered subsets of views: per-subset operators, data and normalisations."""
from __future__ import annotations

import numpy as np

from ._array import safe_reciprocal
from ._common import subset_views, take_views

# Per-subset sensitivities are kept when all of them fit in this many bytes, and
# recomputed each pass otherwise (one extra back-projection of the subset, as LEAP).
SENSITIVITY_CACHE_BYTES = 1 << 30


class Subsets:
    """``M`` interleaved view subsets of an operator (subset m: views m, m+M, …).

    ``arrays`` maps names to projection arrays (or None); ``self[name][m]`` is subset
    m's C-contiguous copy (the array itself when M = 1).
    """

    def __init__(self, op, num_subsets, xp, **arrays):
        self.xp = xp
        self.M = int(num_subsets)
        if self.M == 1:
            self.ops = [op]
            self._data = {k: [v] for k, v in arrays.items()}
        else:
            views = [subset_views(m, self.M) for m in range(self.M)]
            self.ops = [op.subset(v) for v in views]
            self._data = {k: [take_views(xp, v, s) for s in views] for k, v in arrays.items()}
        vol_bytes = 4 * int(np.prod(op.domain_shape))
        self._cache_ok = self.M * vol_bytes <= SENSITIVITY_CACHE_BYTES
        self._sens = {}

    def __len__(self):
        return self.M

    def __getitem__(self, name):
        return self._data[name]

    def inverse_sensitivity(self, m, weights=None, key=None):
        """``1 / P_mᵀ w`` (entries ≤ 0 → 1), ``w`` = 1 or a subset projection array."""
        k = (m, key)
        if k in self._sens:
            return self._sens[k]
        xp = self.xp
        op = self.ops[m]
        w = xp.ones(op.range_shape, dtype=xp.float32) if weights is None else weights
        s = safe_reciprocal(op.adjoint(xp.ascontiguousarray(w, dtype=xp.float32)), xp)
        if self._cache_ok:
            self._sens[k] = s
        return s
