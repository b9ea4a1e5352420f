"""sympy expressions as Excel formulas: symbols become cell references, numbers keep every bit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sympy.printing.str import StrPrinter


class ExcelPrinter(StrPrinter):
    """Excel's syntax differs from sympy's string form only in the power operator and in names."""

    def __init__(self, cells: Mapping[str, str]) -> None:
        super().__init__({"full_prec": True})
        self._cells = cells

    def _print_Symbol(self, expr: Any) -> str:
        return self._cells[expr.name]

    def _print_Float(self, expr: Any) -> str:
        return repr(float(expr)).upper()  # shortest text that reads back as the same double

    def _print_Pow(self, expr: Any, rational: bool = False) -> str:
        return super()._print_Pow(expr, rational).replace("**", "^")

    def _print_Add(self, expr: Any, order: str | None = None) -> str:
        """A sum of cells in the order of the sheet's columns (sympy's own order is alphabetical by name)."""
        if all(term.is_Symbol for term in expr.args):
            refs = [self._cells[term.name] for term in expr.args]
            return " + ".join(sorted(refs, key=_column_order))
        return super()._print_Add(expr, order)


def _column_order(ref: str) -> tuple[int, str]:
    letters = "".join(ch for ch in ref.rsplit("!", 1)[-1] if ch.isalpha())
    return len(letters), letters


def _exact(expr: Any) -> Any:
    """Floats that are whole numbers or their reciprocals as exact rationals: 1/3600 reads better than
    0.0002777777777777778 and means the same to 1 part in 1e15."""
    import sympy

    swaps = {}
    for number in expr.atoms(sympy.Float):
        value = float(number)
        if value == round(value):
            swaps[number] = sympy.Integer(round(value))
        elif value != 0 and abs(1 / value - round(1 / value)) <= 1e-12 * abs(1 / value):
            swaps[number] = sympy.Rational(1, round(1 / value))
    return expr.xreplace(swaps)


def excel_formula(expr: Any, cells: Mapping[str, str]) -> str:
    """`=...` for a sympy expression whose symbols are named after the keys of `cells`."""
    return "=" + ExcelPrinter(cells).doprint(_exact(expr))
