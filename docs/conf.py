"""Sphinx configuration of leap's documentation (``./dev.sh docs``).

The build is strict: ``-W`` turns every warning into an error and ``nitpicky`` makes
every cross-reference that does not resolve a warning, so a broken reference or a
malformed docstring fails the test suite (tests/docs/test_docs.py).

Nothing here executes a notebook: the pages under ``notebooks/`` render the outputs
stored in ``notebooks/*.ipynb`` (refresh them with ``tools/execute_notebooks.py``).
Generated files (notebook copies, geometry pictures) are written by ``_ext/leap_docs.py``
into ``docs/notebooks/`` and ``docs/_generated/``, both ignored by git.
"""
import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS.parent))          # leap, leapctype, ... from this checkout

os.environ.setdefault("MPLBACKEND", "Agg")    # the geometry pictures are drawn headless

import leap

project = "leap"
author = "the leap developers"
copyright = "the leap developers"
release = version = leap.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "myst_nb",
    "leap_docs",
]

root_doc = "index"
exclude_patterns = ["_build", "**.ipynb_checkpoints"]

# ------------------------------------------------------------------ strictness
nitpicky = True
# Classes and modules of other libraries that docstrings name: the build runs offline,
# so there are no intersphinx inventories to resolve them against. Only these names
# are let through unresolved; any other reference that does not resolve fails the build.
nitpick_ignore = [
    ("py:class", "distributed.Client"),       # Dask
    ("py:mod", "scipy.sparse.linalg"),
    ("py:class", "Module"),                   # torch.nn.Module, base of leap.torch's modules
    ("py:func", "torch.library.custom_op"),   # torch's custom-op API (leap.torch.ops)
    ("py:func", "torch.library.register_autograd"),
    ("py:func", "torch.library.opcheck"),
]

# --------------------------------------------------------------------- autodoc
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"          # the docstrings give shapes and units; signatures stay short

napoleon_google_docstring = True     # LEAP's own docstrings ("Args:", "Returns:")
napoleon_numpy_docstring = True
napoleon_use_param = False          # types such as "(num_z, num_y, num_x) float32" stay text
napoleon_use_rtype = False
napoleon_use_ivar = False
# leap's "Attributes" sections are written like "Parameters" ("name : meaning"): render
# them the same way, as text, instead of as attribute entries with typed fields.
napoleon_custom_sections = [("Attributes", "params_style")]

# ---------------------------------------------------------------------- MyST-NB
nb_execution_mode = "off"           # render the stored outputs; the tests run the notebooks
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# ------------------------------------------------------------------------- HTML
html_theme = "furo"
html_title = f"leap {release}"
html_show_sourcelink = False
