"""Shared fixtures and helpers for the test suite."""
import os
from pathlib import Path

import numpy as np
import pytest

REFERENCE_DIR = Path(__file__).parent / "data" / "leap_reference"
REFERENCE_CASES = ("parallel2d", "fan2d", "cone", "cone_curved")


def rel_l2(a, b):
    """Relative L2 difference ‖a − b‖ / ‖b‖ in float64."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def dot_test(P, PT, f_shape, g_shape, rng):
    """Scale-free adjoint mismatch |<Pf,g> − <f,Pᵀg>| / max(‖Pf‖‖g‖, ‖f‖‖Pᵀg‖).

    Both products are normalised by their own scale: the float32 outputs round each
    side relative to it, and dividing by ‖Pf‖‖g‖ alone misreads the rounding of
    <f, Pᵀg> as a mismatch when a random f happens to lie almost in P's null space
    (‖Pf‖ ≪ ‖f‖‖P‖, seen for a rank-1 tiny cone-parallel case whose P and Pᵀ are
    element-for-element transposes)."""
    f = rng.standard_normal(f_shape).astype(np.float32)
    g = rng.standard_normal(g_shape).astype(np.float32)
    Pf = P(f).astype(np.float64)
    PTg = PT(g).astype(np.float64)
    lhs = np.vdot(Pf, g.astype(np.float64))
    rhs = np.vdot(f.astype(np.float64), PTg)
    denom = max(np.linalg.norm(Pf) * np.linalg.norm(g), np.linalg.norm(f) * np.linalg.norm(PTg))
    if np.linalg.norm(Pf) == 0:
        return 0.0, 0.0
    return abs(lhs - rhs) / denom, float(np.linalg.norm(Pf))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
