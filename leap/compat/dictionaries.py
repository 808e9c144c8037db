"""Patch dictionaries for :meth:`tomographicModels.DictionaryDenoising <leap.compat.model.tomographicModels.DictionaryDenoising>` (upstream LEAP's
``utils/generateDictionary.py``; names and arguments kept, so ``from generateDictionary
import *`` works as in LEAP's demo ``d27_dictionaryDenoising``).

A dictionary is a float32 array ``(numElements, N_1, N_2, N_3)`` of patches ("atoms");
2-D dictionaries have N_1 = 1. The separable ones are tensor products of a 1-D basis of
N samples:

* :func:`generateLegendreDictionary` — Legendre polynomials P_0..P_{N−1} sampled at
  x_n = (n − (N − 1)/2)·2/N, orthonormalised;
* :func:`generateDCTDictionary` — DCT-II vectors cos(π/N·(n + ½)·k);
* :func:`generateRidgeletDictionary` — ridge functions: DCT vectors smeared along N + 1
  directions by a parallel-beam back-projection, plus the constant atom.

Every atom but the first (the constant) is made zero-mean, and all have unit norm; the
separable dictionaries are complete and orthonormal (N² or N³ atoms).
"""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["GramSchmidt", "LegendrePolynomialBasis", "BumpBasis", "DCTBasis",
           "generateSeparableBasis", "generateLegendreDictionary", "generateDCTDictionary",
           "generateRidgeletDictionary"]


def _size(name, n, minimum=1):
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {n!r}")
    if n < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {n}")
    return int(n)


def GramSchmidt(basisFcns):
    """Orthonormalise the functions ``basisFcns[n]`` in order (Gram–Schmidt), in place.

    basisFcns : float array (numFunctions, ...) — each ``basisFcns[n]`` a 1-, 2- or 3-D
        function; they must be linearly independent (so numFunctions ≤ samples per
        function). Function n becomes the normalised component of the input function n
        orthogonal to functions 0..n−1.

    Returns ``basisFcns``.
    """
    A = np.asarray(basisFcns)
    if not isinstance(basisFcns, np.ndarray) or A.dtype.kind != "f":
        raise TypeError("basisFcns must be a floating-point NumPy array (it is "
                        "orthonormalised in place)")
    if not 2 <= A.ndim <= 4:
        raise ValueError("basisFcns must be (numFunctions, ...) with 1-, 2- or 3-D "
                         f"functions, got shape {A.shape}")
    n = A.shape[0]
    M = A.reshape(n, -1).astype(np.float64)
    if n > M.shape[1]:
        raise ValueError(f"cannot orthonormalise {n} functions of {M.shape[1]} samples: at "
                         "most as many functions as samples are linearly independent")
    # QR of the functions as columns is Gram–Schmidt done stably: with R's diagonal made
    # positive, Q's columns are exactly the Gram–Schmidt vectors.
    Q, R = np.linalg.qr(M.T)
    d = np.diag(R)
    if np.any(np.abs(d) <= 1e-10 * max(1.0, np.max(np.abs(d)))):
        raise ValueError("basisFcns are linearly dependent: Gram–Schmidt is undefined")
    Q = Q * np.sign(d)
    A[...] = Q.T.reshape(A.shape)
    return basisFcns


def LegendrePolynomialBasis(order, x=None):
    """Legendre polynomials P_0..P_{order−1} sampled at ``x``, each normalised to unit
    norm: array (order, x.size). Default x: ``order`` points
    (n − (order − 1)/2)·2/order, n = 0..order−1, symmetric in (−1, 1)."""
    from scipy.special import eval_legendre
    order = _size("order", order)
    if x is None:
        x = (np.arange(order) - 0.5 * (order - 1)) * 2.0 / order
    x = np.asarray(x, dtype=np.float64).ravel()
    poly = np.stack([eval_legendre(k, x) for k in range(order)])
    norms = np.linalg.norm(poly, axis=1, keepdims=True)
    if np.any(norms == 0.0):
        raise ValueError("x gives an all-zero Legendre polynomial; use more distinct samples")
    return poly / norms


def BumpBasis(N, scale=2.0):
    """N circularly shifted bumps (¼, ½, ¼): array (N, N), row k centred on sample k.
    ``scale`` is accepted for compatibility with upstream and unused there too."""
    N = _size("N", N)
    B = np.zeros((N, N))
    k = np.arange(N)
    B[k, (k - 1) % N] += 0.25
    B[k, k] += 0.5
    B[k, (k + 1) % N] += 0.25
    return B


def DCTBasis(N, type=2):
    """Cosine vectors: array (N, N), row k = cos(π/N·(n + ½)·k) (DCT-II, ``type`` = 2) or
    cos(π/N·n·k) (any other ``type``), n = 0..N−1; not normalised."""
    N = _size("N", N)
    n = np.arange(N)
    shift = 0.5 if type == 2 else 0.0
    return np.cos(np.pi / N * np.outer(np.arange(N), n + shift))


def generateSeparableBasis(basisFcns, do3D=False):
    """Tensor products of a 1-D basis: float32 array (N², 1, N, N) (``do3D`` False; atom
    i·N + j = b_i ⊗ b_j) or (N³, N, N, N) (atom i·N² + j·N + k = b_i ⊗ b_j ⊗ b_k), with
    b_n = ``basisFcns[n]`` (array (N, N)). Every atom but the first is made zero-mean,
    and all are normalised."""
    B = np.asarray(basisFcns, dtype=np.float64)
    if B.ndim != 2 or B.shape[0] != B.shape[1] or B.shape[0] < 1:
        raise ValueError(f"basisFcns must be a square (N, N) array, got shape {B.shape}")
    N = B.shape[0]
    if do3D:
        atoms = np.einsum("ia,jb,kc->ijkabc", B, B, B).reshape(N ** 3, N, N, N)
    else:
        atoms = np.einsum("ia,jb->ijab", B, B).reshape(N * N, 1, N, N)
    atoms[1:] -= atoms[1:].mean(axis=(1, 2, 3), keepdims=True)
    norms = np.sqrt(np.sum(atoms ** 2, axis=(1, 2, 3), keepdims=True))
    if np.any(norms == 0.0):
        raise ValueError("basisFcns give all-zero atoms (a constant function other than "
                         "the first becomes zero once its mean is removed)")
    return (atoms / norms).astype(np.float32)


def generateLegendreDictionary(N_max=8, do3D=False):
    """Orthonormal Legendre-polynomial dictionary of N_max-wide patches: float32
    (N_max², 1, N_max, N_max), or (N_max³, N_max, N_max, N_max) with ``do3D``."""
    return generateSeparableBasis(GramSchmidt(LegendrePolynomialBasis(_size("N_max", N_max))),
                                  do3D)


def generateDCTDictionary(N_max=8, do3D=False):
    """Orthonormal DCT-II dictionary of N_max-wide patches: float32 (N_max², 1, N_max,
    N_max), or (N_max³, N_max, N_max, N_max) with ``do3D``."""
    return generateSeparableBasis(GramSchmidt(DCTBasis(_size("N_max", N_max))), do3D)


def generateRidgeletDictionary(N_max=8):
    """2-D ridgelet-like dictionary of N_max × N_max patches: float32 (N_max², 1, N_max,
    N_max), orthonormalised.

    For each of N_max + 1 directions φ = i·180°/(N_max + 1), the DCT-II vectors 1..N_max−1
    (N_max samples) are back-projected across the patch by a one-view parallel-beam
    back-projection at angle φ (leap's projector; unit pixels, no field-of-view mask),
    giving ridge functions; each is made zero-mean and normalised. A constant atom ends
    the list, and the (N_max + 1)(N_max − 1) + 1 = N_max² atoms are then orthonormalised
    in order (Gram–Schmidt), as upstream does. Upstream notes this dictionary does not
    work as well as the others.

    The ridge functions are linearly dependent for most N_max (rank 14 of 16 for
    N_max = 4, 60 of 64 for N_max = 8): an atom that is a combination of the earlier ones
    is dropped, so the result has as many atoms as the rank, (rank, 1, N_max, N_max).
    (Upstream normalises the rounding residue of such atoms into atoms of noise.)
    """
    from .model import tomographicModels
    N = _size("N_max", N_max, minimum=2)
    per_angle, num_angles = N - 1, N + 1
    dct = DCTBasis(N)
    atoms = np.zeros((num_angles * per_angle + 1, 1, N, N), dtype=np.float64)
    ct = tomographicModels()
    for i in range(num_angles):
        phi = i * 180.0 / num_angles
        ct.set_parallelbeam(1, per_angle, N, 1.0, 1.0, 0.0, 0.5 * (N - 1),
                            np.array([phi], dtype=np.float32))
        ct.set_default_volume(1.0)
        ct.set_diameterFOV(100.0)     # wider than the patch: no voxel is masked
        g = ct.allocate_projections()
        f = ct.allocate_volume()
        g[0] = dct[1:].astype(np.float32)   # row k − 1 holds DCT vector k
        ct.backproject(g, f)
        ridge = f.astype(np.float64)          # (N − 1, N, N): one ridge function per slice
        ridge -= ridge.mean(axis=(1, 2), keepdims=True)
        ridge /= np.sqrt(np.sum(ridge ** 2, axis=(1, 2), keepdims=True))
        atoms[i * per_angle:(i + 1) * per_angle, 0] = ridge
    atoms[-1] = 1.0 / N
    return _independent_orthonormal(atoms).astype(np.float32)


def _independent_orthonormal(atoms, tol=1.0e-5):
    """Gram–Schmidt of unit-norm ``atoms`` (n, ...) in order, dropping each atom whose
    component orthogonal to the kept ones has norm < ``tol`` (it lies in their span up to
    the float32 rounding of the back-projection). Returns the kept orthonormal atoms."""
    flat = atoms.reshape(atoms.shape[0], -1)
    kept = []
    for u in flat:
        for _ in range(2):      # re-orthogonalise once: Gram–Schmidt loses orthogonality
            for v in kept:
                u = u - np.dot(u, v) * v
        nu = np.linalg.norm(u)
        if nu >= tol:
            kept.append(u / nu)
    return np.stack(kept).reshape((len(kept),) + atoms.shape[1:])
