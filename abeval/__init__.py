"""abeval: A/B test and offline ranking evaluation for recommender systems.

The Python API (docs/python.md): ``abeval.open(db)`` gives a store whose methods
ingest, report, plan power and build the agreement board; ``abeval.evaluate``
scores recommendation runs; ``abeval.render`` turns a result into the CLI's text,
HTML or JSON, and each result's ``to_frame()`` into a pandas DataFrame. They are
imported on first use, so that importing abeval (and starting the CLI) stays fast.

>>> import abeval
>>> with abeval.open("demo/demo.duckdb", read_only=True) as store:  # doctest: +SKIP
...     report = store.report("home-reco-v2")
...     frame = report.to_frame()
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing typing would slow `import abeval`

__version__ = "0.1.0"


def _is_the_program() -> bool:
    """Whether this process is the ``abeval`` command (``abeval`` or
    ``python -m abeval``), not a program that imports abeval."""
    import os
    import sys

    argv = list(getattr(sys, "orig_argv", sys.argv))
    if "-m" in argv:
        return argv[argv.index("-m") + 1 : argv.index("-m") + 2] == ["abeval"]
    return len(argv) > 1 and os.path.basename(argv[1]) == "abeval"


if _is_the_program():  # first thing: a signal from now on exits cleanly (abeval.signals)
    from abeval import signals as _signals

    _signals.install()

# ``open`` is left out so that ``from abeval import *`` keeps the builtin open;
# ``dir(abeval)`` lists it with the rest (:func:`__dir__`).
__all__ = [
    "AbevalError",
    "InputError",
    "NotFoundError",
    "OptionError",
    "OutputError",
    "Store",
    "StoreError",
    "__version__",
    "api",
    "evaluate",
    "program",
    "render",
]

if TYPE_CHECKING:
    from typing import Any

    from abeval import api as api
    from abeval import render as render
    from abeval.api import Store, evaluate, program
    from abeval.api import open as open
    from abeval.errors import (
        AbevalError,
        InputError,
        NotFoundError,
        OptionError,
        OutputError,
        StoreError,
    )

#: Each public name → the module it is imported from when first asked for (a
#: module's own name: the module itself).
_LAZY = {
    "open": "abeval.api",
    "evaluate": "abeval.api",
    "program": "abeval.api",
    "Store": "abeval.api",
    "AbevalError": "abeval.errors",
    "InputError": "abeval.errors",
    "NotFoundError": "abeval.errors",
    "OptionError": "abeval.errors",
    "OutputError": "abeval.errors",
    "StoreError": "abeval.errors",
    "api": "abeval.api",
    "render": "abeval.render",
}


def __dir__() -> list[str]:
    """The public names (``__all__`` and ``open``), for completion: none is imported
    until used."""
    return sorted({*__all__, "open"})


def __getattr__(name: str) -> Any:
    """The API's names, imported when first asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'abeval' has no attribute {name!r}")
    import importlib

    imported = importlib.import_module(module)
    return imported if module == f"abeval.{name}" else getattr(imported, name)
