"""sympy expressions as Excel formulas: symbols become cell references, numbers keep every bit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sympy.printing.str import StrPrinter

from perfmodel.outputs.symbolic import tidy


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
        return super()._print_Pow(expr, rational).replace("**", "^").replace("sqrt(", "SQRT(")

    def _print_exp(self, expr: Any) -> str:
        return f"EXP({self._print(expr.args[0])})"

    def _print_log(self, expr: Any) -> str:
        return f"LN({self._print(expr.args[0])})"

    def _print_ceiling(self, expr: Any) -> str:
        return f"CEILING({self._print(expr.args[0])},1)"

    def _print_Add(self, expr: Any, order: str | None = None) -> str:
        """A sum of cells in the order of the sheet's columns (sympy's own order is alphabetical by name)."""
        if all(term.is_Symbol for term in expr.args):
            refs = [self._cells[term.name] for term in expr.args]
            return " + ".join(sorted(refs, key=_column_order))
        return super()._print_Add(expr, order)


def _column_order(ref: str) -> tuple[int, str]:
    letters = "".join(ch for ch in ref.rsplit("!", 1)[-1] if ch.isalpha())
    return len(letters), letters


def excel_formula(expr: Any, cells: Mapping[str, str]) -> str:
    """`=...` for a sympy expression whose symbols are named after the keys of `cells`."""
    return "=" + ExcelPrinter(cells).doprint(tidy(expr))
