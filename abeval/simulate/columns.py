"""Arrow columns built from numpy arrays: numbered ids (``u17``) and labels
chosen by index."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def strings(prefix: str, numbers: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """``prefix + str(n)`` for each number, null where ``valid`` is False."""
    mask = None if valid is None else ~valid
    digits = pc.cast(pa.array(numbers, mask=mask), pa.string())
    return pc.binary_join_element_wise(prefix, digits, "")


def labels(values: tuple[str, ...] | list[str], index: np.ndarray) -> pa.Array:
    """``values[i]`` for each ``i`` of ``index``, as a plain string column."""
    dictionary = pa.DictionaryArray.from_arrays(pa.array(index), pa.array(values, pa.string()))
    return dictionary.cast(pa.string())
