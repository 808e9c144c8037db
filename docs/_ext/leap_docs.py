"""Sphinx extension for leap's documentation.

* Copies ``notebooks/*.ipynb`` to ``docs/notebooks/`` (Sphinx reads sources from the
  docs folder only) and warns about a notebook without stored outputs.
* Draws a picture of each scan geometry with the LEAP facade's ``sketch_system`` into
  ``docs/_generated/geometry/``.
* The ``leap-methods`` directive documents methods of
  :class:`leap.compat.model.tomographicModels` by name, noting their LEAP aliases, and
  the build warns about any public method that no page lists.
"""
from __future__ import annotations

import filecmp
import inspect
import shutil
import warnings
from pathlib import Path

from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_refnode

logger = logging.getLogger(__name__)

DOCS = Path(__file__).resolve().parent.parent
REPO = DOCS.parent
NOTEBOOK_SOURCE = REPO / "notebooks"
NOTEBOOK_COPY = DOCS / "notebooks"
PICTURES = DOCS / "_generated" / "geometry"

FACADE = "leap.compat.model.tomographicModels"


# --------------------------------------------------------------------- notebooks
def copy_notebooks(app) -> None:
    """Mirror notebooks/*.ipynb into docs/notebooks/; files are copied only when they
    changed, so an incremental build re-reads only changed notebooks."""
    import nbformat
    NOTEBOOK_COPY.mkdir(exist_ok=True)
    sources = sorted(NOTEBOOK_SOURCE.glob("*.ipynb"))
    for old in NOTEBOOK_COPY.glob("*.ipynb"):
        if not (NOTEBOOK_SOURCE / old.name).exists():
            old.unlink()
    for src in sources:
        dst = NOTEBOOK_COPY / src.name
        if not dst.exists() or not filecmp.cmp(src, dst, shallow=False):
            shutil.copyfile(src, dst)
        nb = nbformat.read(src, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        if code and not any(c.get("outputs") for c in code):
            logger.warning("notebook %s has no stored outputs (the docs do not execute "
                           "notebooks): run tools/execute_notebooks.py %s",
                           src.relative_to(REPO), src.relative_to(REPO),
                           type="leap", subtype="notebook")


# ---------------------------------------------------------------- geometry pictures
def _geometries():
    """(file stem, caption, tomographicModels) of every scan geometry leap models."""
    import numpy as np

    from leap.compat.model import tomographicModels

    n_views, rows, cols = 36, 32, 64
    centre_row, centre_col = 0.5 * (rows - 1), 0.5 * (cols - 1)
    sod, sdd = 100.0, 180.0

    def model(setter, *args, volume=True, **kwargs):
        ct = tomographicModels()
        getattr(ct, setter)(*args, **kwargs)
        if volume:
            ct.set_default_volume()
        return ct

    phis = np.arange(n_views) * 360.0 / n_views
    cases = [
        ("parallel", "Parallel beam (set_parallelbeam)",
         model("set_parallelbeam", n_views, rows, cols, 2.0, 2.0, centre_row, centre_col,
               phis / 2)),
        ("fan", "Fan beam (set_fanbeam)",
         model("set_fanbeam", n_views, rows, cols, 2.0, 2.0, centre_row, centre_col, phis,
               sod, sdd)),
        ("cone", "Cone beam, flat detector (set_conebeam)",
         model("set_conebeam", n_views, rows, cols, 2.0, 2.0, centre_row, centre_col, phis,
               sod, sdd)),
    ]
    curved = model("set_conebeam", n_views, rows, cols, 2.0, 2.0, centre_row, centre_col,
                   phis, sod, sdd, volume=False)
    curved.set_curvedDetector()
    curved.set_default_volume()
    cases.append(("cone_curved", "Cone beam, curved detector (set_curvedDetector)", curved))
    helical = model("set_conebeam", 3 * n_views, rows, cols, 2.0, 2.0, centre_row,
                    centre_col, np.arange(3 * n_views) * 360.0 / n_views, sod, sdd,
                    volume=False)
    helical.set_normalizedHelicalPitch(0.8)
    helical.set_default_volume()
    cases.append(("helical", "Helical cone beam (set_normalizedHelicalPitch)", helical))
    cases.append(("coneparallel", "Cone-parallel beam (set_coneparallel)",
                  model("set_coneparallel", n_views, rows, cols, 2.0, 2.0, centre_row,
                        centre_col, phis, sod, sdd)))
    modular = model("set_conebeam", n_views, rows, cols, 2.0, 2.0, centre_row, centre_col,
                    phis, sod, sdd)
    modular.convert_to_modularbeam()
    cases.append(("modular", "Modular beam (set_modularbeam; here a converted cone beam)",
                  modular))
    return cases


def draw_geometries(app) -> None:
    """Draw every geometry with ``sketch_system`` (first view and a quarter turn later)."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    PICTURES.mkdir(parents=True, exist_ok=True)
    for stem, caption, ct in _geometries():
        n = ct.get_numAngles()
        with warnings.catch_warnings():
            # sketch_system calls plt.show(), which Agg answers with a UserWarning.
            warnings.simplefilter("ignore", UserWarning)
            fig = ct.sketch_system(whichView=[0, n // 4])
        ax = fig.axes[0]
        ax.set_aspect("equal")            # lengths true to scale
        ax.set_title(caption, fontsize=10)
        fig.set_size_inches(5.0, 4.6)
        fig.savefig(PICTURES / f"{stem}.png", dpi=90, bbox_inches="tight")
        plt.close(fig)


# ------------------------------------------------------------- facade reference
def _facade_class():
    from leap.compat.model import tomographicModels
    return tomographicModels


def _function(cls, name):
    """The plain function behind ``cls.name``, or None for data attributes/properties."""
    attr = inspect.getattr_static(cls, name)
    if isinstance(attr, (staticmethod, classmethod)):
        attr = attr.__func__
    return attr if inspect.isfunction(attr) else None


def facade_names():
    """{public name: its alias group (a tuple of names, the defining name first)}."""
    cls = _facade_class()
    names = [n for n in dir(cls) if not n.startswith("_")]
    by_function = {}
    for n in names:
        f = _function(cls, n)
        by_function.setdefault(id(f) if f is not None else n, []).append(n)
    groups = {}
    for members in by_function.values():
        f = _function(cls, members[0])
        members.sort(key=lambda m: (f is None or m != f.__name__, m))
        for m in members:
            groups[m] = tuple(members)
    return groups


class LeapMethods(SphinxDirective):
    """``.. leap-methods::`` with one or more names of tomographicModels members per
    line: each is documented with autodoc (its aliases named below the docstring)."""

    has_content = True

    def run(self):
        groups = facade_names()
        cls = _facade_class()
        names = " ".join(self.content).split()
        lines = []
        documented = self.env.__dict__.setdefault("leap_facade_documented", {})
        mine = documented.setdefault(self.env.docname, set())
        for name in names:
            if name not in groups:
                logger.warning("leap-methods: tomographicModels has no member %r", name,
                               location=self.get_location(), type="leap", subtype="facade")
                continue
            mine.update(groups[name])
            attr = inspect.getattr_static(cls, name)
            if _function(cls, name) is not None:
                directive = "automethod"
            elif isinstance(attr, property):
                directive = "autoproperty"
            else:
                directive = "autoattribute"
            lines.append(f".. {directive}:: {FACADE}.{name}")
            lines.append("")
            aliases = [a for a in groups[name] if a != name]
            if aliases:
                lines.append("   Also available as " + ", ".join(f"``{a}``" for a in aliases)
                             + ".")
                lines.append("")
        return self.parse_text_to_nodes("\n".join(lines))


def _purge(app, env, docname):
    getattr(env, "leap_facade_documented", {}).pop(docname, None)


def _merge(app, env, docnames, other):
    mine = env.__dict__.setdefault("leap_facade_documented", {})
    mine.update(getattr(other, "leap_facade_documented", {}))


def check_facade_coverage(app, env):
    """Warn about public tomographicModels members that no ``leap-methods`` lists."""
    documented = set().union(*getattr(env, "leap_facade_documented", {}).values())
    if not documented:
        return                          # a partial build without the facade pages
    missing = sorted(n for n in facade_names() if n not in documented)
    if missing:
        logger.warning("tomographicModels members in no API page (add them to a "
                       "leap-methods list in docs/api/leap/): %s", ", ".join(missing),
                       type="leap", subtype="facade")


# ----------------------------------------------------------- re-exported names
def resolve_reexported(app, env, node, contnode):
    """Resolve a Python reference to the name under which the object is documented.

    leap documents objects where users import them from (``leap.io.read_param_file``,
    ``leap.distributed.fbp``), while docstrings written inside the defining modules name
    them relative to those modules (``read_param_file`` in ``leap.io.params``) or by
    their defining path (``leap.distributed.slabs.default_slabs``). Candidates, in order:
    the name in each enclosing package of the current module; the dotted name with one
    module component dropped; the one object of that name in the current top-level
    package. Anything still unresolved stays a warning (an error under ``-W``)."""
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    target = node["reftarget"]
    kinds = set(domain.objtypes_for_role(node["reftype"]) or ())
    if not kinds:
        return None
    module = node.get("py:module") or ""
    candidates = []
    parts = module.split(".") if module else []
    for i in range(len(parts) - 1, 0, -1):
        candidates.append(".".join(parts[:i] + [target]))
    dotted = target.split(".")
    for i in range(1, len(dotted) - 1):
        candidates.append(".".join(dotted[:i] + dotted[i + 1:]))
    found = next((c for c in candidates
                  if c in domain.objects and domain.objects[c].objtype in kinds), None)
    if found is None and module:
        package = module.split(".")[0] + "."
        inside = [name for name, entry in domain.objects.items()
                  if name.startswith(package) and name.endswith("." + target)
                  and entry.objtype in kinds]
        found = inside[0] if len(inside) == 1 else None
    if found is None:
        return None
    entry = domain.objects[found]
    return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode,
                        found)


def setup(app):
    app.connect("builder-inited", copy_notebooks)
    app.connect("builder-inited", draw_geometries)
    app.add_directive("leap-methods", LeapMethods)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-check-consistency", check_facade_coverage)
    app.connect("missing-reference", resolve_reexported)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

