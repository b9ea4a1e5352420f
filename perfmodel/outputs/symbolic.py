"""Small sympy helpers shared by `explain` and the spreadsheet export: symbols, tidy numbers, printing with values.

Expressions are only ever built from `Symbol` objects made here from names fixed in perfmodel's code; no user text is
parsed by sympy (its string parser evaluates code).
"""

from __future__ import annotations

from typing import Any

import sympy
from sympy.printing.latex import LatexPrinter
from sympy.printing.str import StrPrinter


def S(name: str) -> sympy.Symbol:
    """A positive symbol; `name` is a constant of perfmodel's code, never user input."""
    return sympy.Symbol(name, positive=True)


def tidy(expr: Any) -> Any:
    """Floats that are whole numbers or their reciprocals as exact rationals: 1/3600 reads better than
    0.0002777777777777778, and 1.0*x as x; the value changes by at most one part in 1e12."""
    swaps = {}
    for atom in expr.atoms(sympy.Float):
        value = float(atom)
        if value == round(value):
            swaps[atom] = sympy.Integer(round(value))
        elif value != 0 and abs(1 / value - round(1 / value)) <= 1e-12 * abs(1 / value):
            swaps[atom] = sympy.Rational(1, round(1 / value))
    return expr.xreplace(swaps)


def number(value: float) -> str:
    """Four significant digits, plain for everyday magnitudes, scientific otherwise."""
    if value == 0:
        return "0"
    if 1e-3 <= abs(value) < 1e6:
        return f"{value:.4g}"
    return f"{value:.3e}"


class _WithValues:
    """Printer mixin: each known symbol prints as its number; terms in sympy's lexical order with the subtracted
    ones last (`pp - 1`, `a + b - eta*Min(a, w)`), so the symbolic and the substituted forms line up."""

    def __init__(self, values: dict[sympy.Symbol, float]) -> None:
        super().__init__()
        self._values = values

    def _as_ordered_terms(self, expr: Any, order: Any = None) -> list[Any]:
        terms = super()._as_ordered_terms(expr, order="lex")  # type: ignore[misc]
        return sorted(terms, key=lambda term: term.could_extract_minus_sign())


class _ValueStr(_WithValues, StrPrinter):
    def _print_Symbol(self, expr: Any) -> str:
        return number(self._values[expr]) if expr in self._values else super()._print_Symbol(expr)

    def _print_Float(self, expr: Any) -> str:
        """A constant at the four digits its symbols' values print with: explain's straggler wait read
        '1.17741002251547*sigma_rank' (sqrt(2 ln 2)) beside 'sigma_rank = 0.007547'."""
        return number(float(expr))


class _ValueLatex(_WithValues, LatexPrinter):
    def _print_Symbol(self, expr: Any, style: str = "plain") -> str:
        if expr not in self._values:
            return super()._print_Symbol(expr, style)
        return latex_number(self._values[expr])

    def _print_Float(self, expr: Any) -> str:
        return latex_number(float(expr))


def latex_number(value: float) -> str:
    """`number` in LaTeX: 1.234 \\cdot 10^{-5} for 1.234e-05."""
    text = number(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        return rf"{mantissa} \cdot 10^{{{int(exponent)}}}"
    return text


def formula_text(expr: Any, values: dict[sympy.Symbol, float] | None = None, latex: bool = False) -> str:
    """The expression in plain text or LaTeX; with `values`, every known symbol shows as its number."""
    return (_ValueLatex if latex else _ValueStr)(values or {}).doprint(expr)
