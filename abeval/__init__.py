"""abeval: A/B test and offline ranking evaluation for recommender systems.

The Python API (docs/python.md): ``abeval.open(db)`` gives a store whose methods
ingest, report, plan power and build the agreement board; ``abeval.evaluate``
scores recommendation runs. They are imported on first use, so that importing
abeval (and starting the CLI) stays fast.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing typing would slow `import abeval`

__version__ = "0.1.0"

# ``open`` is left out so that ``from abeval import *`` keeps the builtin open.
__all__ = ["AbevalError", "InputError", "OptionError", "Store", "__version__", "evaluate"]

if TYPE_CHECKING:
    from typing import Any

    from abeval.api import Store, evaluate
    from abeval.api import open as open
    from abeval.errors import AbevalError, InputError, OptionError

_LAZY = {
    "open": "abeval.api",
    "evaluate": "abeval.api",
    "Store": "abeval.api",
    "AbevalError": "abeval.errors",
    "InputError": "abeval.errors",
    "OptionError": "abeval.errors",
}


def __getattr__(name: str) -> Any:
    """The API's names, imported when first asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'abeval' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
