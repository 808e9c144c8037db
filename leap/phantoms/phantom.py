""":class:`Phantom`: an ordered list of solids, voxelised or integrated along lines."""
from __future__ import annotations

import numbers
from typing import Iterator, Sequence

import numpy as np

from ._chords import _line_integrals
from ._inside import _voxelize_all
from .objects import PhantomObject, _as_real_array, _coords, _positive_scalar, _rays


class Phantom:
    """An ordered collection of :class:`PhantomObject` solids.

    Later objects override earlier ones wherever they overlap (LEAP
    semantics); see the module docstring.

    Parameters
    ----------
    objects : iterable of PhantomObject, optional
        Initial objects, in order.
    """

    def __init__(self, objects: Sequence[PhantomObject] | None = None):
        self._objects: list[PhantomObject] = []
        self._packed = None
        if objects is not None:
            for obj in objects:
                self.add(obj)

    # -- container protocol -------------------------------------------------
    def add(self, obj: PhantomObject) -> "Phantom":
        """Append ``obj`` (it overrides all previously added objects where they overlap).

        Returns ``self`` so that calls can be chained.
        """
        if not isinstance(obj, PhantomObject):
            raise TypeError(f"Phantom.add: expected a PhantomObject, got {type(obj).__name__}")
        self._objects.append(obj)
        self._packed = None
        return self

    def clear(self) -> None:
        """Remove all objects."""
        self._objects.clear()
        self._packed = None

    def __len__(self) -> int:
        return len(self._objects)

    def __iter__(self) -> Iterator[PhantomObject]:
        return iter(list(self._objects))

    def __getitem__(self, index):
        return self._objects[index]

    @property
    def objects(self) -> tuple[PhantomObject, ...]:
        """The objects, in order (a tuple snapshot)."""
        return tuple(self._objects)

    def __repr__(self) -> str:
        return f"Phantom({len(self)} objects)"

    def scale(self, factor) -> "Phantom":
        """Scale the phantom geometry in place about the origin.

        ``centre[i]``, ``radii[i]`` and ``clip[i]`` are multiplied by
        ``factor[i]`` (as LEAP's ``scalePhantom`` does); values and rotations
        are unchanged.

        Parameters
        ----------
        factor : float or array_like, shape (3,)
            Positive scale factor(s) ``(sx, sy, sz)``.  A uniform factor scales
            every object exactly.  Non-uniform factors are exact only for
            unrotated, non-cone objects (``radii`` are in object axes, and a
            cone's end radii are scaled by the factors of their slots).

        Returns
        -------
        Phantom
            ``self``.
        """
        f = _as_real_array(factor, "factor")
        if f.ndim == 0:
            f = np.full(3, float(f))
        if f.shape != (3,) or not np.all(np.isfinite(f)) or not np.all(f > 0.0):
            raise ValueError(f"factor: expected a positive number or three positive numbers, got {np.asarray(factor).tolist()}")
        new = []
        for o in self._objects:
            new.append(
                PhantomObject(
                    kind=o.kind,
                    centre=o.centre * f,
                    radii=o.radii * f,
                    value=o.value,
                    rotation=o.rotation,
                    clip=o.clip * f,
                )
            )
        self._objects = new
        self._packed = None
        return self

    def permute_axes(self, order) -> "Phantom":
        """A new phantom with world axes relabelled: new axis ``i`` is old axis ``order[i]``.

        Each object keeps its kind, radii and value (they live in the object's own
        axes); its centre and clipping planes are permuted and its rotation becomes
        ``A @ P.T`` (``P`` the permutation matrix, new = P @ old), so every point of the
        old phantom at ``p`` is at ``P @ p`` in the new one.

        LEAP voxelises into a rotationally symmetric volume (numZ, numY, 1) with
        ``order = (2, 0, 1)``: the object's x runs along the volume's y and its y along z.
        """
        try:
            perm = [int(i) for i in order]
        except (TypeError, ValueError):
            raise TypeError(f"order: expected a permutation of (0, 1, 2), got {order!r}") from None
        if sorted(perm) != [0, 1, 2]:
            raise ValueError(f"order: expected a permutation of (0, 1, 2), got {order!r}")
        P = np.eye(3)[perm]
        return Phantom([PhantomObject(kind=o.kind, centre=o.centre[perm], radii=o.radii,
                                      value=o.value, rotation=o.rotation @ P.T,
                                      clip=o.clip[perm])
                        for o in self._objects])

    # -- packed representation for the kernels -------------------------------
    def _pack(self):
        if self._packed is None:
            n = len(self._objects)
            kinds = np.empty(n, np.int64)
            cens = np.empty((n, 3))
            As = np.empty((n, 3, 3))
            rads = np.empty((n, 3))
            clips = np.empty((n, 3))
            vals = np.empty(n)
            ext = np.empty((n, 3))
            for i, o in enumerate(self._objects):
                kinds[i] = o.kind
                cens[i] = o.centre
                As[i] = o.rotation
                rads[i] = o.radii
                clips[i] = o.clip
                vals[i] = o.value
                ext[i] = o.world_half_extents()
            # bounding sphere (slightly inflated for rounding safety)
            brad2 = np.sum(ext * ext, axis=1) * (1.0 + 1e-9) + 1e-12
            norms2 = np.array([np.linalg.norm(A, 2) for A in As]) if n else np.zeros(0)
            self._packed = (kinds, cens, As, rads, clips, vals, ext, brad2, norms2)
        return self._packed

    # -- voxelisation --------------------------------------------------------
    def voxelize(self, x, y, z, voxel_width, voxel_height, oversampling=1, out=None):
        """Voxelise the phantom onto a regular grid.

        Objects are applied in order; each one *replaces* (does not add to)
        the current voxel values.  With ``oversampling = n > 1`` every voxel is
        probed at ``n**3`` sub-sample points and, if a fraction ``p`` of them
        lies inside the object, the voxel becomes
        ``(1 - p) * old + p * value`` (so a voxel fully inside is set to
        ``value`` and one fully outside is untouched).  As in LEAP, the
        sub-sample offsets along x are
        ``voxel_width / (n + 1) * (k - (n - 1) / 2)``, ``k = 0 .. n-1``
        (likewise y, and z with ``voxel_height``).  With ``n = 1`` each voxel
        centre is tested and the voxel is overwritten if it is inside.

        Parameters
        ----------
        x : array_like, shape (numX,)
            Voxel-centre x coordinates (mm).
        y : array_like, shape (numY,)
            Voxel-centre y coordinates (mm).
        z : array_like, shape (numZ,)
            Voxel-centre z coordinates (mm).
        voxel_width : float
            Voxel size along x and y (mm), > 0.
        voxel_height : float
            Voxel size along z (mm), > 0.
        oversampling : int, optional
            Sub-samples per voxel and axis, >= 1 (default 1).  (LEAP silently
            caps this at 5; no cap is applied here.)
        out : numpy.ndarray, shape (numZ, numY, numX), float32, optional
            C-contiguous, writeable array to draw into; its current contents
            are the background that the objects override.  If omitted a
            zero-filled array is allocated.

        Returns
        -------
        numpy.ndarray, shape (numZ, numY, numX), float32
            The voxelised phantom (``out`` itself when given).
        """
        xs = _coords(x, "x")
        ys = _coords(y, "y")
        zs = _coords(z, "z")
        vw = _positive_scalar(voxel_width, "voxel_width")
        vh = _positive_scalar(voxel_height, "voxel_height")
        if isinstance(oversampling, (bool, np.bool_)) or not isinstance(oversampling, numbers.Integral):
            raise ValueError(f"oversampling: expected a positive integer, got {oversampling!r}")
        os_ = int(oversampling)
        if os_ < 1:
            raise ValueError(f"oversampling: expected a positive integer (>= 1), got {os_}")
        shape = (zs.size, ys.size, xs.size)
        if out is None:
            out = np.zeros(shape, dtype=np.float32)
        else:
            if not isinstance(out, np.ndarray):
                raise ValueError(f"out: expected a numpy.ndarray, got {type(out).__name__}")
            if out.dtype != np.float32:
                raise ValueError(f"out: expected dtype float32, got {out.dtype}")
            if out.shape != shape:
                raise ValueError(f"out: expected shape (numZ, numY, numX) = {shape}, got {out.shape}")
            if not out.flags.c_contiguous:
                raise ValueError("out: expected a C-contiguous array, got a non-contiguous one")
            if not out.flags.writeable:
                raise ValueError("out: expected a writeable array, got a read-only one")
        if len(self._objects) == 0:
            return out

        k = np.arange(os_, dtype=np.float64) - 0.5 * (os_ - 1)
        offx = vw / (os_ + 1) * k
        offz = vh / (os_ + 1) * k
        kinds, cens, As, rads, clips, vals, ext, _, norms2 = self._pack()
        # every sub-sample lies within ``dworld`` of its voxel centre
        dworld = float(np.sqrt(2.0 * offx[-1] ** 2 + offz[-1] ** 2)) * (1.0 + 1e-9)
        dlocal = dworld * norms2 * (1.0 + 1e-9)
        # per-object voxel index ranges (bounding box grown by one voxel)
        sel = []
        for axis, (coords, size) in enumerate(((xs, vw), (ys, vw), (zs, vh))):
            mask = np.abs(coords[None, :] - cens[:, axis : axis + 1]) <= ext[:, axis : axis + 1] + size
            clipped = clips[:, axis] != 0.0
            mask[clipped] &= coords[None, :] <= clips[clipped, axis : axis + 1] + size
            sel.append(mask)
        xmask, ymask, zmask = sel
        empty = ~(xmask.any(axis=1) & ymask.any(axis=1))
        zmask[empty] = False
        xptr = np.concatenate(([0], np.cumsum(xmask.sum(axis=1)))).astype(np.int64)
        yptr = np.concatenate(([0], np.cumsum(ymask.sum(axis=1)))).astype(np.int64)
        xidx = np.nonzero(xmask)[1].astype(np.int64)
        yidx = np.nonzero(ymask)[1].astype(np.int64)
        _voxelize_all(
            out, xs, ys, zs, zmask, xptr, xidx, yptr, yidx, offx, offx, offz,
            kinds, cens, As, rads, clips, vals, dworld, dlocal,
        )
        return out

    # -- analytic line integrals ----------------------------------------------
    def line_integrals(self, sources, directions):
        """Exact line integrals of the phantom along full lines.

        For each ray the integral of the phantom function over the whole line
        ``{sources[i] + t * directions[i] : t in (-inf, inf)}`` is computed
        analytically, with the same "last object wins" overlap rule as
        :meth:`voxelize` (it is the continuum limit of integrating the
        voxelised phantom).  Any point on the line may be given as the
        source; the position along the line does not matter.

        Parameters
        ----------
        sources : array_like, shape (N, 3)
            A point on each line (mm).  A single (3,) vector is broadcast.
        directions : array_like, shape (N, 3)
            Direction of each line; normalised internally, must be non-zero.
            A single (3,) vector is broadcast.

        Returns
        -------
        numpy.ndarray, shape (N,), float64
            Line integrals (value x mm, i.e. dimensionless for 1/mm values).
        """
        src = _rays(sources, "sources")
        dirs = _rays(directions, "directions")
        if src.shape[0] != dirs.shape[0]:
            if src.shape[0] == 1:
                src = np.broadcast_to(src, dirs.shape)
            elif dirs.shape[0] == 1:
                dirs = np.broadcast_to(dirs, src.shape)
            else:
                raise ValueError(
                    f"sources and directions: expected the same number of rays, got {src.shape[0]} and {dirs.shape[0]}"
                )
        norms = np.sqrt(np.sum(dirs * dirs, axis=1))
        if np.any(norms == 0.0):
            bad = int(np.flatnonzero(norms == 0.0)[0])
            raise ValueError(f"directions: expected non-zero vectors, got a zero vector at row {bad}")
        # normalise here as well (guards against overflow for huge vectors)
        dirs = dirs / norms[:, None]
        src = np.ascontiguousarray(src, dtype=np.float64)
        dirs = np.ascontiguousarray(dirs, dtype=np.float64)
        n = src.shape[0]
        out = np.zeros(n, dtype=np.float64)
        if n == 0 or len(self._objects) == 0:
            return out
        kinds, cens, As, rads, clips, vals, _, brad2, _ = self._pack()
        _line_integrals(src, dirs, kinds, cens, As, rads, clips, vals, brad2, out)
        return out


# ---------------------------------------------------------------------------
# Standard phantoms
# ---------------------------------------------------------------------------
