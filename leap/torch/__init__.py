"""PyTorch adapter (the only part of leap that imports torch).

The autograd Functions and the ``Projector``/``FBP`` modules live here; this package is
filled in by the torch-layer work and is importable (empty) until then.
"""
