"""Sphinx configuration of skrisk's documentation (``make docs`` builds it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's skrisk, not an installed copy

import skrisk  # noqa: E402

project = "skrisk"
author = "The skrisk developers"
copyright = "the skrisk developers, BSD-3-Clause"  # noqa: A001
release = version = skrisk.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip",
                    "examples/README.rst", "**/sg_execution_times.rst"]
templates_path = ["_templates"]

# Every cross-reference inside skrisk must resolve (-W turns a broken one into an error). The build
# runs offline, so there is no intersphinx: references to the libraries skrisk builds on are left
# as plain names, and only those.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|npt|pandas|pd|scipy|sklearn|torch|skorch|dask|distributed|modAL|pyarrow|"
               r"transformers|tokenizers|safetensors|gensim|matplotlib|ipywidgets|collections|typing|"
               r"pathlib|os|io|datetime|concurrent|tqdm|skops|html|pickle|json|re|input)(\..*)?"),
    (r"py:class", r"(array-like|array_like|ndarray|DataFrame|Series|Tensor|SliceDict|callable|"
                  r"path-like|file-like|int|float|str|bool|dict|list|tuple|None|object|iterable|"
                  r"Iterable|Iterator|Sequence|Mapping|Path)"),
]

autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "inherited-members": False, "member-order": "bysource"}
autodoc_typehints = "none"  # numpydoc states every type in the docstring
toc_object_entries_show_parents = "hide"  # the page TOC lists fit(), not Class.fit()
autodoc_inherit_docstrings = False  # a method skrisk overrides without a docstring is not shown
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# The gallery runs at every build, on one thread, with the examples' own small sizes.
os.environ.setdefault("OMP_NUM_THREADS", "1")
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "show_memory": False,
    "plot_gallery": "True",
}

html_theme = "pydata_sphinx_theme"
html_title = f"skrisk {release}"
html_static_path = ["_static"]
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
# pages without sub-pages need no section navigation: their drawings and tables get the width
html_sidebars = {page: [] for page in ("index", "getting_started", "benchmarks", "architecture",
                                      "changelog", "api-0.2")}
html_css_files = ["skrisk.css"]
html_show_sourcelink = False
html_copy_source = False

def _skip_foreign_member(app, what, name, obj, skip, options):
    """Document skrisk's own members only (not the ``set_*_request`` methods scikit-learn adds)."""
    func = getattr(obj, "fget", obj)
    module = getattr(func, "__module__", None) or ""
    if callable(func) and not module.startswith("skrisk"):
        return True
    return None


def _resolve_public_alias(app, env, node, contnode):
    """Resolve a docstring's reference written as skrisk's users write it.

    ``skrisk.LearnRisk`` is documented once, as ``skrisk.risk.LearnRisk``; a docstring of one
    package names another package's public object without its package (``PairDataset``,
    ``DataError``). A reference resolves to the one documented object whose qualified name ends
    with it; anything else (a private name, a name two objects share) stays a broken reference.
    """
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip(".~")
    objects = env.get_domain("py").objects
    if target.startswith("skrisk.") and target.count(".") == 1:
        target = target.split(".", 1)[1]
    found = [name for name, obj in objects.items() if not obj.aliased
             and (name == target or name.endswith("." + target))]
    if len(found) != 1:
        return None
    from sphinx.util.nodes import make_refnode

    obj = objects[found[0]]
    return make_refnode(app.builder, node["refdoc"], obj.docname, obj.node_id, contnode, found[0])


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_member)
    app.connect("missing-reference", _resolve_public_alias)
