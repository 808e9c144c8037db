"""Analytic reconstruction and its parts: FBP / FDK for every geometry and its adjoint
(:mod:`~leap.reconstruction.fbp`), the ramp filters (:mod:`~leap.reconstruction.filters`)
and projection weights (:mod:`~leap.reconstruction.weights`) it is made of, back-projection
filtration (:mod:`~leap.reconstruction.bpf`), rebinning (:mod:`~leap.reconstruction.rebin`),
tilted detectors (:mod:`~leap.reconstruction.tilt_resampling`), flying focal spots
(:mod:`~leap.reconstruction.focal_spots`) and LEAP's special forward models with their
inversions (:mod:`~leap.reconstruction.special_models`).

The modules are imported by name (``from leap.reconstruction.fbp import fbp``); the
package itself imports nothing, so any one of them loads without the others.
"""
