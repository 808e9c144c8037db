"""Dictionary denoising: sparse coding of every patch of a 3-D array (LEAP's
``DictionaryDenoising``).

Every patch of the array (all positions, overlapping, the array's edges extended by
replication) is approximated by orthogonal matching pursuit (OMP, Pati, Rezaiifar and
Krishnaprasad 1993) with at most ``sparsity`` atoms of the dictionary; each voxel then
becomes the average of the approximations of all the patches that contain it. A
patch whose content is not well represented by a few atoms (noise) loses it, so the
result is a denoised array.

OMP for one patch x (M voxels), dictionary atoms d_j (rows of D, K × M):

1. residual r = x, selected set I = ∅;
2. pick j ∉ I maximising ``|<r, d_j>| / ‖d_j‖``, add it to I;
3. γ = argmin ‖x − D_Iᵀ γ‖ (least squares on the selected atoms), r = x − D_Iᵀ γ;
4. stop after ``sparsity`` atoms, or when ‖r‖² < ε·‖x‖² (ε > 0), else go to 2.

It is implemented as "Batch-OMP" (Rubinstein, Zibulevsky and Elad 2008): with the Gram
matrix G = D Dᵀ and α⁰ = D x, the correlations of the residual are α⁰ − G[:, I] γ and
‖r‖² = ‖x‖² − γ·α⁰_I, so the patch is read once and each step costs ``O(K·|I|)``; the
least-squares system G_II γ = α⁰_I is solved with a Cholesky factor grown one row per
step.

Upstream (``src/matching_pursuit.cu``, GPU only) does the same with two differences
leap does not copy: it measures the patch energy for the ε test as Σ_j <x, d_j>², which
is ‖x‖² only for a complete orthonormal dictionary (such as the demo's Legendre/DCT
ones, where the results agree), and it averages with a fixed weight 1/M although near
the array's faces not all of a voxel's M patches are coded (patch corners run from
−⌊(P − 1)/2⌋ to about N − 1 − ⌊(P − 1)/2⌋ along an axis of N voxels, P the patch size),
which darkens the outer ⌊P/2⌋ voxels at the low faces and up to ⌊(P − 1)/2⌋ at the high
faces; here every voxel is the mean of exactly M patch approximations.
"""
from __future__ import annotations

import math
import numbers

import numba
import numpy as np

__all__ = ["dictionary_denoise"]

# Residual correlations below this fraction of ‖x‖ carry no signal (float32 data): OMP
# stops there instead of fitting rounding errors (upstream stops at an absolute 1e-12).
_CORR_TOL = 1.0e-9
# An atom whose component orthogonal to the selected ones has (relative) squared norm
# below this is a linear combination of them: selecting it cannot reduce the residual.
_PIVOT_TOL = 1.0e-10
#: Size (bytes) of the patch block coded at once.
_BLOCK_BYTES = 1 << 26


@numba.njit(cache=True, nogil=True)
def _omp_one(alpha0, xx, G, inv_norm, k_max, eps, alpha, L, idx, gamma, tmp, used):
    """Batch-OMP of one patch from its correlations ``alpha0`` = D x (K,) and energy
    ``xx`` = ‖x‖² (``inv_norm``: 1/‖d_j‖); returns the number n of atoms chosen, their
    indices ``idx[:n]`` and coefficients ``gamma[:n]``. ``alpha`` (K), ``L`` (k_max,
    k_max), ``tmp`` (k_max) and ``used`` (K) are scratch space."""
    K = alpha0.shape[0]
    if xx == 0.0:
        return 0
    for j in range(K):
        alpha[j] = alpha0[j]
        used[j] = False
    corr_floor = _CORR_TOL * math.sqrt(xx)
    n = 0
    while n < k_max:
        best, jbest = -1.0, -1
        for j in range(K):
            if not used[j]:
                c = abs(alpha[j]) * inv_norm[j]
                if c > best:
                    best, jbest = c, j
        if jbest < 0 or best <= corr_floor:
            break
        # Cholesky row of the new atom: L[n, :n] = L⁻¹ G[I, j], L[n, n] = √(G_jj − ‖w‖²).
        for a in range(n):
            s = G[idx[a], jbest]
            for b in range(a):
                s -= L[a, b] * L[n, b]
            L[n, a] = s / L[a, a]
        d = G[jbest, jbest]
        for a in range(n):
            d -= L[n, a] * L[n, a]
        used[jbest] = True
        if d <= _PIVOT_TOL * G[jbest, jbest]:
            continue                # in the span of the selected atoms: skip it
        L[n, n] = math.sqrt(d)
        idx[n] = jbest
        n += 1
        # γ = (L Lᵀ)⁻¹ α⁰_I by forward and back substitution.
        for a in range(n):
            s = alpha0[idx[a]]
            for b in range(a):
                s -= L[a, b] * tmp[b]
            tmp[a] = s / L[a, a]
        for a in range(n - 1, -1, -1):
            s = tmp[a]
            for b in range(a + 1, n):
                s -= L[b, a] * gamma[b]
            gamma[a] = s / L[a, a]
        # ‖r‖² = ‖x‖² − γ·α⁰_I since the residual is orthogonal to the selected atoms.
        r2 = xx
        for a in range(n):
            r2 -= gamma[a] * alpha0[idx[a]]
        if eps > 0.0 and r2 < eps * xx:
            break
        # Residual correlations α⁰ − G[:, I] γ (G symmetric: read its rows, contiguous).
        for j in range(K):
            alpha[j] = alpha0[j]
        for a in range(n):
            ga = gamma[a]
            Ga = G[idx[a]]
            for j in range(K):
                alpha[j] -= Ga[j] * ga
    return n


@numba.njit(cache=True, nogil=True, parallel=True)
def _omp_rows(alpha0, xx, D, G, inv_norm, k_max, eps, Y, n_chunks):
    """OMP of every patch (row) of ``alpha0`` = X Dᵀ (n, K) with energies ``xx`` (n,);
    row r of ``Y`` (n, M) receives the approximation Σ γ_q d_{I_q} of patch r. The rows
    are split into ``n_chunks`` parallel tasks (scratch space is allocated per task)."""
    n_rows, K = alpha0.shape
    M = D.shape[1]
    n_chunks = max(1, min(n_rows, n_chunks))
    for c in numba.prange(n_chunks):
        alpha = np.empty(K)
        L = np.zeros((k_max, k_max))
        idx = np.zeros(k_max, dtype=np.int64)
        gamma = np.zeros(k_max)
        tmp = np.zeros(k_max)
        used = np.zeros(K, dtype=np.bool_)
        rec = np.empty(M)
        for r in range(c * n_rows // n_chunks, (c + 1) * n_rows // n_chunks):
            n = _omp_one(alpha0[r], xx[r], G, inv_norm, k_max, eps, alpha, L, idx, gamma,
                         tmp, used)
            for m in range(M):
                rec[m] = 0.0
            for q in range(n):
                gq = gamma[q]
                Dq = D[idx[q]]
                for m in range(M):
                    rec[m] += gq * Dq[m]
            for m in range(M):
                Y[r, m] = rec[m]


def _check_dictionary(dictionary):
    if hasattr(dictionary, "detach"):
        dictionary = dictionary.detach().cpu().numpy()
    elif type(dictionary).__module__.split(".")[0] == "cupy":
        dictionary = dictionary.get()
    D = np.asarray(dictionary)
    if D.dtype.kind not in "fiu":
        raise TypeError(f"dictionary must be a real numeric array, got dtype {D.dtype}")
    if D.ndim != 4 or min(D.shape) < 1:
        raise ValueError("dictionary must be a 4-D array (numElements, N_1, N_2, N_3) of "
                         "patches (use N_1 = 1 for 2-D patches), got shape "
                         f"{D.shape}")
    D = D.astype(np.float64)
    if not np.all(np.isfinite(D)):
        raise ValueError("dictionary must be finite (found NaN or inf)")
    norms = np.sqrt(np.sum(D.reshape(D.shape[0], -1) ** 2, axis=1))
    if np.any(norms == 0.0):
        raise ValueError("dictionary has all-zero patches (elements "
                         f"{np.flatnonzero(norms == 0.0)[:5].tolist()}); every element must "
                         "be a non-zero patch")
    return D


def dictionary_denoise(f, dictionary, sparsity=8, epsilon=0.0):
    """Sparse-code every patch of ``f`` over ``dictionary`` and replace ``f``, in place, by
    the average of the patch approximations (see the module docstring).

    Parameters
    ----------
    f : (N_1, N_2, N_3) or (N_2, N_3) float32 NumPy array
        Any 3-D (or 2-D) data, e.g. a volume (numZ, numY, numX); overwritten.
    dictionary : (numElements, P_1, P_2, P_3) array
        The atoms (patches), patch axes in the order of ``f``'s axes (P_1 = 1 for 2-D
        patches, which are coded within each slice f[k]). Atoms need not be normalised
        or orthogonal; any linearly dependent ones are skipped.
    sparsity : int
        Maximum number of atoms per patch, 1 ≤ sparsity ≤ numElements.
    epsilon : float
        Relative residual tolerance ≥ 0: coding of a patch x stops once
        ‖x − approximation‖² < epsilon·‖x‖² (0: always use ``sparsity`` atoms). Larger
        values denoise more strongly.

    Returns ``f``.
    """
    if not isinstance(f, np.ndarray):
        raise TypeError(f"f must be a NumPy array, got {type(f).__name__}")
    if f.dtype != np.float32:
        raise TypeError(f"f must be float32 (it is denoised in place), got {f.dtype}")
    if f.ndim not in (2, 3) or f.size == 0:
        raise ValueError(f"f must be a non-empty 2-D or 3-D array, got shape {f.shape}")
    if not f.flags.writeable:
        raise ValueError("f is read-only; DictionaryDenoising works in place")
    if not np.all(np.isfinite(f)):
        raise ValueError("f must be finite (found NaN or inf)")
    D = _check_dictionary(dictionary)
    K = D.shape[0]
    if isinstance(sparsity, bool) or not isinstance(sparsity, numbers.Integral):
        raise TypeError(f"sparsityThreshold must be an integer, got {sparsity!r}")
    if not 1 <= sparsity <= K:
        raise ValueError(f"sparsityThreshold must be between 1 and the number of dictionary "
                         f"elements ({K}), got {sparsity}")
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise TypeError(f"epsilon must be a real number, got {epsilon!r}")
    epsilon = float(epsilon)
    if not (math.isfinite(epsilon) and epsilon >= 0.0):
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon}")

    f3 = f[None] if f.ndim == 2 else f        # a view, also of a non-contiguous f
    P = D.shape[1:]
    M = int(np.prod(P))
    # Pad by P − 1 on both sides (edges replicated), so that every voxel lies in exactly
    # M patches: the patch corners run over [−(P − 1), N − 1] along each axis. The data
    # stay float32 (as upstream); OMP itself computes in float64.
    fp = np.pad(f3, [(p - 1, p - 1) for p in P], mode="edge").astype(np.float32, copy=False)
    acc = np.zeros(fp.shape, dtype=np.float32)
    Dflat = np.ascontiguousarray(D.reshape(K, M))
    D32T = np.ascontiguousarray(Dflat.T.astype(np.float32))
    G = Dflat @ Dflat.T
    inv_norm = 1.0 / np.sqrt(np.diag(G))
    windows = np.lib.stride_tricks.sliding_window_view(fp, P)   # (C1, C2, C3) + P, a view
    C1, C2, C3 = windows.shape[:3]
    # Patches are coded in blocks of corner rows: the correlations D·x are one matrix
    # product (BLAS), OMP and the (sparse) approximations run in parallel per patch,
    # and the approximations are overlap-added offset by offset.
    rows = max(1, min(C2, _BLOCK_BYTES // (4 * C3 * (2 * M + K))))
    for c1 in range(C1):
        for c2 in range(0, C2, rows):
            nb = min(rows, C2 - c2)
            X = windows[c1, c2:c2 + nb].reshape(nb * C3, M)     # copies the patches
            alpha0 = X @ D32T
            xx = np.einsum("ij,ij->i", X, X, dtype=np.float64)
            Y = np.empty((nb * C3, M), dtype=np.float32)
            _omp_rows(alpha0, xx, Dflat, G, inv_norm, int(sparsity), epsilon, Y,
                      4 * numba.get_num_threads())
            Y = Y.reshape((nb, C3) + P)
            for a in range(P[0]):
                for b in range(P[1]):
                    for c in range(P[2]):
                        acc[c1 + a, c2 + b:c2 + b + nb, c:c + C3] += Y[:, :, a, b, c]
    inner = tuple(slice(p - 1, p - 1 + n) for p, n in zip(P, f3.shape))
    f3[...] = acc[inner] * np.float32(1.0 / M)
    return f
