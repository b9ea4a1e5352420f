"""Branch-free arithmetic shared by floats, numpy arrays and sympy symbols.

The model's formulas are written once with these helpers, so the same function predicts one layout (floats),
searches thousands at once (numpy arrays) and prints its own formula (sympy symbols).
"""

from __future__ import annotations

import math
from typing import Any

Number = Any  # float | numpy.ndarray | sympy.Expr


PLAIN = frozenset((float, int, bool))
"""Types priced as plain Python numbers."""
ROUNDING = 1e-9
"""ceil and floor forgive a value this far past a whole number (a ratio of whole numbers computed in floats)."""


def _kind(*xs: Number) -> str:
    for x in xs:
        kind = _KINDS.get(type(x)) or _kind_of(type(x))
        if kind != "float":
            return kind
    return "float"


_KINDS: dict[type, str] = dict.fromkeys(PLAIN, "float")
"""The kind of each type met so far: the array path asks for thousands of values per evaluation."""


def _kind_of(kind: type) -> str:
    module = kind.__module__
    found = (
        "numpy" if module.startswith("numpy") else "sympy" if module.startswith("sympy")
        else "trace" if module == "perfmodel.physics.trace" else "float"
    )  # fmt: skip
    _KINDS[kind] = found
    return found


def maximum(a: Number, b: Number) -> Number:
    if type(a) in PLAIN and type(b) in PLAIN:  # the hot path of a single prediction
        return a if a >= b else b
    kind = _kind(a, b)
    if kind == "float":
        return a if a >= b else b
    if kind == "trace":
        return _traced("maximum", a, b)
    if kind == "numpy":
        import numpy as np

        return np.maximum(a, b)
    import sympy

    return sympy.Max(a, b)


def minimum(a: Number, b: Number) -> Number:
    if type(a) in PLAIN and type(b) in PLAIN:
        return a if a <= b else b
    kind = _kind(a, b)
    if kind == "float":
        return a if a <= b else b
    if kind == "trace":
        return _traced("minimum", a, b)
    if kind == "numpy":
        import numpy as np

        return np.minimum(a, b)
    import sympy

    return sympy.Min(a, b)


def ceil(a: Number) -> Number:
    if type(a) in PLAIN:
        return float(math.ceil(a - ROUNDING))
    kind = _kind(a)
    if kind == "float":
        return float(math.ceil(a - ROUNDING))
    if kind == "trace":
        return _traced("ceil", a)
    if kind == "numpy":
        import numpy as np

        return np.ceil(a - ROUNDING)
    import sympy

    return sympy.ceiling(a)


def floor(a: Number) -> Number:
    if type(a) in PLAIN:
        return float(math.floor(a + ROUNDING))
    kind = _kind(a)
    if kind == "float":
        return float(math.floor(a + ROUNDING))
    if kind == "trace":
        return _traced("floor", a)
    if kind == "numpy":
        import numpy as np

        return np.floor(a + ROUNDING)
    import sympy

    return sympy.floor(a)


def where(condition: Number, if_true: Number, if_false: Number) -> Number:
    if type(condition) in PLAIN and type(if_true) in PLAIN and type(if_false) in PLAIN:
        return if_true if condition else if_false
    kind = _kind(condition, if_true, if_false)
    if kind == "float":
        return if_true if condition else if_false
    if kind == "trace":
        return _traced("where", condition, if_true, if_false)
    if kind == "numpy":
        import numpy as np

        return np.where(condition, if_true, if_false)
    import sympy

    return sympy.Piecewise((if_true, condition), (if_false, True))


def _elementwise(a: Number, scalar: Any, name: str) -> Number:
    """`scalar(a)` for a float, numpy's `name` for an array, sympy's `name` for a symbol."""
    if type(a) in PLAIN:  # the hot path of a single prediction
        return scalar(a)
    kind = _kind(a)
    if kind == "float":
        return scalar(a)
    if kind == "trace":
        return _traced(name, a)
    if kind == "numpy":
        import numpy as np

        return getattr(np, name)(a)
    import sympy

    return getattr(sympy, name)(a)


def log2(a: Number) -> Number:
    if type(a) in PLAIN:
        return math.log2(a)
    if _kind(a) == "sympy":
        import sympy

        return sympy.log(a, 2)
    return _elementwise(a, math.log2, "log2")


def exp(a: Number) -> Number:
    return _elementwise(a, math.exp, "exp")


def sqrt(a: Number) -> Number:
    return _elementwise(a, math.sqrt, "sqrt")


def lookup(table: tuple[float, ...], index: Number) -> Number:
    """table[index] for an integer-valued index (float or array)."""
    if type(index) in PLAIN:
        return table[int(index)]
    kind = _kind(index)
    if kind == "numpy":
        import numpy as np

        return np.asarray(table)[np.asarray(index, dtype=np.int64)]
    if kind == "trace":
        return _traced("lookup", table, index)
    return table[int(index)]


def equal(a: Number, b: Number) -> Number:
    """a == b as a condition: sympy's `==` compares structure (Float(1.0) == 1 is False), so symbols get `Eq`."""
    if _kind(a, b) == "sympy":
        import sympy

        return sympy.Eq(a, b)
    return a == b


def _traced(name: str, *args: Number) -> Number:
    """A call of this module's `name` recorded in the program being traced (perfmodel.physics.trace)."""
    from perfmodel.physics import trace

    return trace.call(name, *args)
