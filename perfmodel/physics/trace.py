"""Compile a branch-free formula into one flat Python function of plain numbers, by tracing it once.

`step.evaluate` is written once for floats, arrays and symbols. Priced with floats it spends most of its time in
Python calls (the helpers, the NamedTuples, the memo), not in its ~1,300 operations. Called once with `Traced`
stand-ins for its layout variables, it records every operation that depends on them, in order, as one line of
Python; everything else (the context's rates, tiers and op lists) is computed during that call and enters the
program as constants. The compiled program performs the same float operations in the same order as the formula
(less those that give a float back unchanged, _NEUTRAL), so it returns the same numbers to the last bit, and a
change to the formulas changes the program with them: nothing is restated here.

Tracing refuses (`Untraceable`) what a flat program cannot replay: a Python `if`, `float()` or `int()` on a traced
value. The branch-free rule of the physics forbids those, so a refusal means the scalar path is used as it is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from perfmodel.physics import algebra

_PLAIN_LITERALS = (int, float, bool)
_WIDENING = frozenset(("+", "-", "*", "/", "//", "%", "**", "<", "<=", ">", ">=", "==", "!="))
"""Operators for which Python turns an int meeting a float into that float first (comparisons compare exactly)."""
_EXACT_INT = 2**53
"""Ints up to this size are floats exactly: written as float literals where they meet a float, the program saves
the conversion (about a tenth of the default scenario's step) and computes the same numbers."""


class Untraceable(Exception):
    """The formula asked a Python question about a traced value (a branch, float(), int())."""


class _Program:
    """The lines recorded so far and the constants they refer to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.constants: dict[str, Any] = {}
        self.seen: dict[str, Traced] = {}

    @staticmethod
    def plain(value: Any) -> bool:
        """Whether `value` is a plain Python number whenever the program runs on plain numbers."""
        return value.plain if isinstance(value, Traced) else type(value) in algebra.PLAIN

    @staticmethod
    def floating(value: Any) -> bool:
        """Whether `value` is a Python float whenever the program runs on floats."""
        return value.floating if isinstance(value, Traced) else type(value) is float

    def operand(self, value: Any, widened: bool = False) -> str:
        """The program's text for `value`; `widened`: it meets a float in an operator that converts ints to floats,
        so an exact int is written as that float."""
        if isinstance(value, Traced):
            if value.program is not self:
                raise Untraceable("a traced value of another program")
            return value.name
        if widened and type(value) is int and abs(value) <= _EXACT_INT:
            value = float(value)
        if type(value) in _PLAIN_LITERALS and repr(value) == repr(type(value)(repr(value))):
            return f"({value!r})"  # exact: repr round-trips ints, bools and finite floats
        name = f"k{len(self.constants)}"
        self.constants[name] = value
        return name

    def emit(self, expression: str, plain: bool, floating: bool = False) -> Traced:
        """The value of `expression`; one computed before is reused (every operation is pure, so it gives the same
        number again: the formulas restate shared subexpressions, e.g. a shard's tokens, in many places)."""
        found = self.seen.get(expression)
        if found is None:
            found = self.seen[expression] = Traced(self, f"v{len(self.lines)}", plain, floating)
            self.lines.append(f"    {found.name} = {expression}")
        return found


_NEUTRAL = {("-", False): 0.0, ("*", False): 1.0, ("*", True): 1.0, ("/", False): 1.0}
"""(operator, whether the number is on its left) -> the number that gives a float back unchanged to the last bit:
x - 0.0, x * 1.0, 1.0 * x, x / 1.0 (not x + 0.0, which turns -0.0 into 0.0). The formulas write many (a term
absent from this model, a factor left at 1.0); the program skips them, which changes no number."""


def _neutral(self: Traced, other: Any, symbol: str, left: bool) -> bool:
    """Whether `other` (a plain number) leaves the float `self` unchanged under `symbol` (_NEUTRAL)."""
    neutral = _NEUTRAL.get((symbol, left))
    return (
        neutral is not None and self.floating and type(other) in (int, float) and other == neutral
        and math.copysign(1.0, other) > 0
    )  # fmt: skip


def _binary(symbol: str) -> tuple[Callable[[Traced, Any], Traced], Callable[[Traced, Any], Traced]]:
    arithmetic = symbol in _WIDENING and symbol[0] not in "<>=!"

    def result(self: Traced, other: Any, text: str) -> Traced:
        program = self.program
        floating = arithmetic and (self.floating or program.floating(other) or symbol == "/")
        return program.emit(text, self.plain and program.plain(other), floating)

    def forward(self: Traced, other: Any) -> Traced:
        if _neutral(self, other, symbol, left=False):
            return self
        operand = self.program.operand(other, self.floating and symbol in _WIDENING)
        return result(self, other, f"{self.name} {symbol} {operand}")

    def reflected(self: Traced, other: Any) -> Traced:
        if _neutral(self, other, symbol, left=True):
            return self
        operand = self.program.operand(other, self.floating and symbol in _WIDENING)
        return result(self, other, f"{operand} {symbol} {self.name}")

    return forward, reflected


class Traced:
    """A value of the program being recorded: each operation on it becomes a line of that program."""

    __slots__ = ("floating", "name", "plain", "program")
    __array_ufunc__ = None  # numpy scalars hand the operation back to Traced instead of building object arrays
    __hash__ = object.__hash__

    def __init__(self, program: _Program, name: str, plain: bool = True, floating: bool = False) -> None:
        self.program, self.name, self.plain, self.floating = program, name, plain, floating

    __add__, __radd__ = _binary("+")
    __sub__, __rsub__ = _binary("-")
    __mul__, __rmul__ = _binary("*")
    __truediv__, __rtruediv__ = _binary("/")
    __floordiv__, __rfloordiv__ = _binary("//")
    __mod__, __rmod__ = _binary("%")
    __pow__, __rpow__ = _binary("**")
    __and__, __rand__ = _binary("&")
    __or__, __ror__ = _binary("|")
    __xor__, __rxor__ = _binary("^")
    __lt__, _ = _binary("<")
    __le__, _ = _binary("<=")
    __gt__, _ = _binary(">")
    __ge__, _ = _binary(">=")
    __eq__, _ = _binary("==")  # type: ignore[assignment]
    __ne__, _ = _binary("!=")  # type: ignore[assignment]

    def __neg__(self) -> Traced:
        return self.program.emit(f"-{self.name}", self.plain, self.floating)

    def __pos__(self) -> Traced:
        return self.program.emit(f"+{self.name}", self.plain, self.floating)

    def __abs__(self) -> Traced:
        return self.program.emit(f"abs({self.name})", self.plain, self.floating)

    def __invert__(self) -> Traced:
        return self.program.emit(f"~{self.name}", self.plain)

    def __bool__(self) -> bool:
        raise Untraceable(f"a Python branch on the traced value {self.name}")

    def __float__(self) -> float:
        raise Untraceable(f"float() of the traced value {self.name}")

    def __int__(self) -> int:
        raise Untraceable(f"int() of the traced value {self.name}")

    __index__ = __int__


_INLINE = {
    "where": "({1} if {0} else {2})",
    "maximum": "({0} if {0} >= {1} else {1})",
    "minimum": "({0} if {0} <= {1} else {1})",
    "ceil": "float(math_ceil({0} - ROUNDING))",
    "floor": "float(math_floor({0} + ROUNDING))",
}
"""The helpers' own expressions for plain numbers (their first branch in algebra.py), written in line."""


def call(name: str, *args: Any) -> Traced:
    """Record a call of `algebra.<name>` (where, maximum, ceil, ...). On plain numbers where, maximum and minimum
    are written as the helper's own expression; otherwise the helper is called, and decides at run time."""
    program = next(a.program for a in args if isinstance(a, Traced))
    operands = [program.operand(a) for a in args]
    plain = all(all(map(program.plain, a)) if isinstance(a, tuple) else program.plain(a) for a in args)
    if plain and name in _INLINE:
        branches = args[1:] if name == "where" else args
        floating = name in ("ceil", "floor") or all(map(program.floating, branches))
        return program.emit(_INLINE[name].format(*operands), plain=True, floating=floating)
    return program.emit(f"{name}({', '.join(operands)})", plain, floating=plain and name in _FLOAT_RESULTS)


def _build(program: _Program, value: Any) -> str:
    """The expression rebuilding a traced result: NamedTuples, tuples, lists and dicts of traced values."""
    if isinstance(value, Traced):
        return program.operand(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        # the tuple the formula returned, packed as it is: its class's __new__ ran while tracing (calling the class
        # would run it again on its own results), and packing skips a Python call per NamedTuple
        items = ", ".join(_build(program, v) for v in value)
        return f"new_tuple({program.operand(type(value))}, ({items},))"
    if isinstance(value, tuple | list):
        items = ", ".join(_build(program, v) for v in value)
        return f"({items},)" if isinstance(value, tuple) else f"[{items}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_build(program, k)}: {_build(program, v)}" for k, v in value.items()) + "}"
    return program.operand(value)


HELPERS = ("where", "maximum", "minimum", "ceil", "floor", "log2", "exp", "sqrt", "lookup")
_FLOAT_RESULTS = frozenset(("log2", "exp", "sqrt"))
"""Helpers that return a float for plain numbers (their math-module function)."""


_NAME = re.compile(r"\b[vk]\d+\b")
_WORD = re.compile(r"\b[A-Za-z_]\w*")
_KEYWORDS = frozenset(("def", "compiled", "return", "if", "else", "abs", "float"))
_OUTSIDE_NUMBERS = re.compile(r"['\"\\;\[\]{}@#]|(?<!\d)\.|\.(?!\d)")


def checked(source: str, names: set[str]) -> str:
    """`source` if it is a program `compile_traced` writes and nothing else: assignments of operators, numbers (the
    repr of ints, floats and bools) and calls of the names given to it. Nothing a user supplies is text in it (a
    figure from a file enters as a number or as a named constant), and this check keeps it so before it runs."""
    words = {w for w in _WORD.findall(source) if not _NAME.fullmatch(w)} - _KEYWORDS - names - {"True", "False"}
    if words or _OUTSIDE_NUMBERS.search(source):
        raise ValueError(f"not a traced program: {sorted(words) or _OUTSIDE_NUMBERS.findall(source)}")
    return source


def _needed(lines: list[str], returned: str) -> list[str]:
    """The lines the returned expression depends on (a formula computes parts a caller may not ask for)."""
    wanted = set(_NAME.findall(returned))
    kept = []
    for line in reversed(lines):
        name, expression = line.split(" = ", 1)
        if name.strip() in wanted:
            wanted.update(_NAME.findall(expression))
            kept.append(line)
    return kept[::-1]


MAX_INLINE_DEPTH = 12
"""How deeply `_inlined` nests expressions (Python's parser refuses 200 nested parentheses)."""


def _inlined(lines: list[str], returned: str) -> tuple[list[str], str]:
    """The program with each value used once written into its one use instead of a variable of its own: the same
    operations on the same operands, so the same numbers, with fewer stores and loads."""
    uses: dict[str, int] = {}
    for text in [*(line.split(" = ", 1)[1] for line in lines), returned]:
        for name in _NAME.findall(text):
            uses[name] = uses.get(name, 0) + 1
    pending: dict[str, tuple[str, int]] = {}  # inlinable names: their expression and its nesting depth

    def substituted(expression: str) -> tuple[str, int]:
        depth = 0

        def one(match: re.Match[str]) -> str:
            nonlocal depth
            found = pending.pop(match.group(), None)
            if found is None:
                return match.group()
            depth = max(depth, found[1])
            return f"({found[0]})"

        return _NAME.sub(one, expression), depth + 1

    kept = []
    for line in lines:
        name, expression = line.split(" = ", 1)
        name = name.strip()
        text, depth = substituted(expression)
        if uses.get(name) == 1 and depth < MAX_INLINE_DEPTH:
            pending[name] = (text, depth)
        else:
            kept.append(f"    {name} = {text}")
    return kept, substituted(returned)[0]


def compile_traced(formula: Callable[..., Any], arguments: tuple[str, ...]) -> Callable[..., Any]:
    """`formula(*arguments)` as one flat function of floats (call it with floats only: an int argument could give
    a float where the formula gives an int); raises Untraceable when the formula branches on an argument. (Compiled
    for arrays it would be no faster: numpy's element work is the same.)"""
    program = _Program()
    result = formula(*(Traced(program, name, floating=True) for name in arguments))
    returned = _build(program, result)
    lines, returned = _inlined(_needed(program.lines, returned), returned)
    body = "\n".join(lines)
    source = f"def compiled({', '.join(arguments)}):\n{body}\n    return {returned}\n"
    namespace: dict[str, Any] = {name: getattr(algebra, name) for name in HELPERS} | program.constants
    namespace |= {"math_ceil": math.ceil, "math_floor": math.floor, "ROUNDING": algebra.ROUNDING}
    namespace["new_tuple"] = tuple.__new__
    checked(source, {*namespace, *arguments})
    exec(compile(source, "<perfmodel.physics.trace>", "exec"), namespace)  # noqa: S102 - checked(): no text
    compiled: Callable[..., Any] = namespace["compiled"]
    compiled.source = source  # type: ignore[attr-defined]
    return compiled
