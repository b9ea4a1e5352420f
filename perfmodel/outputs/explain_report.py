"""An Explanation for people (text), for papers and slides (LaTeX) and for programs (JSON)."""

from __future__ import annotations

import json
from typing import Any

import sympy

from perfmodel.outputs.explain import Explanation, Part, Quantity
from perfmodel.outputs.symbolic import S, formula_text, latex_number, number

PART_SYMBOLS = {
    "compute_s": "T_compute",
    "tp_comm_exposed_s": "T_TP",
    "cp_comm_exposed_s": "T_CP",
    "pp_bubble_s": "T_bubble",
    "pp_comm_exposed_s": "T_PP",
    "dp_comm_exposed_s": "T_DP",
    "optimizer_s": "T_optimizer",
    "other_s": "T_other",
    "ep_comm_exposed_s": "T_EP",
}


def _step_equation(e: Explanation, latex: bool = False) -> tuple[str, str]:
    """T_step as the sum of its parts, in the model's order: symbols, and their values."""
    symbols = [S(PART_SYMBOLS[part.key]) for part in e.parts]
    names = " + ".join(formula_text(s, latex=latex) for s in symbols)
    return names, " + ".join(formula_text(s, {s: part.value}, latex) for s, part in zip(symbols, e.parts, strict=True))


def _values(quantities: list[Quantity]) -> dict[sympy.Symbol, float]:
    return {q.symbol: q.value for q in quantities}


def _bounds_line(e: Explanation) -> str:
    shares = ", ".join(f"{bound} {seconds / e.step_time_s:.1%}" for bound, seconds in e.bounds.items())
    return f"Bound by {e.dominant}: {e.bounds[e.dominant] / e.step_time_s:.1%} of the step ({shares})"


def text(e: Explanation, ops: bool = True) -> str:
    step, step_values = _step_equation(e)
    lines = [
        e.title,
        f"Layout: {e.layout}",
        *([f"Experts: {e.experts}"] if e.experts else []),
        *e.workload,
        "",
        _bounds_line(e),
        "",
        f"T_step = {step}",
        f"       = {step_values} = {number(e.step_time_s)} s",
    ]
    for index, part in enumerate(e.parts, start=1):
        lines += ["", *_part_text(index, part, e.step_time_s)]
    if e.evidence is not None:
        lines += ["", "How near the measured runs the calibration saw:", *(f"  {x}" for x in e.evidence.lines())]
    if ops:
        lines += ["", *_ops_text(e)]
    return "\n".join(lines)


def _part_text(index: int, part: Part, step_s: float) -> list[str]:
    name = PART_SYMBOLS[part.key]
    pad = " " * len(name)
    lines = [
        f"{index}. {part.title} ({part.key}): {number(part.value)} s, {part.value / step_s:.1%} of the step",
        f"   {name} = {formula_text(part.formula)}",
        f"   {pad} = {formula_text(part.formula, _values(part.quantities))}",
        f"   {pad} = {number(part.evaluated())} s",
    ]
    width = max(len(q.symbol.name) for q in part.quantities)
    for q in part.quantities:
        value = f"{number(q.value)} {q.unit}".strip()
        lines.append(f"     {q.symbol.name:<{width}} = {value:<14} {q.meaning}")
    lines += [f"     ({note})" for note in part.notes]
    return lines


def _ops_text(e: Explanation) -> list[str]:
    from perfmodel.outputs.columns import tabulated

    lines = ["Operations of one transformer layer, one micro-batch, on one GPU; each takes its roofline time:"]
    width = max(len(name) for name in e.op_formulas)
    lines += [f"  {name:<{width}}  t = {formula_text(f)}" for name, f in e.op_formulas.items()]
    lines.append("  F FLOPs, B bytes moved, E softmax exponentials, w wave-quantisation efficiency of the GEMM, and")
    lines += [f"  {q.symbol.name} = {f'{number(q.value)} {q.unit}'.strip()}: {q.meaning}" for q in e.op_symbols]
    rows = [
        [
            r.phase,
            r.name,
            r.kind,
            r.fmt,
            f"{r.flops / 1e9:,.1f}",
            f"{r.bytes / 1e6:,.1f}",
            f"{r.wave:.3f}" if r.kind in ("gemm", "grouped_gemm") else "",
            f"{r.time_s * 1e6:,.1f}",
            r.bound,
        ]
        for r in e.ops
    ]
    headers = ["phase", "operation", "kind", "format", "GFLOP", "MB", "w", "time (us)", "bound"]
    lines += ["", tabulated(rows, headers=headers, disable_numparse=True, colalign=("left",) * 4 + ("right",) * 4)]
    return lines


def latex(e: Explanation) -> str:
    step, step_values = _step_equation(e, latex=True)
    lines = [
        f"% perfmodel explain: {latex_text(e.title)}; {latex_text(e.layout)}",
        f"% {_bounds_line(e)}",
        r"\begin{align*}",
        rf"T_{{step}} &= {step} \\",
        rf"&= {step_values} = {latex_number(e.step_time_s)}\,\mathrm{{s}} \\[1ex]",
    ]
    for part in e.parts:
        name = sympy.latex(S(PART_SYMBOLS[part.key]))
        values = _values(part.quantities)
        lines += [
            rf"{name} &= {formula_text(part.formula, latex=True)} \\",
            rf"&= {formula_text(part.formula, values, latex=True)} = {latex_number(part.value)}\,\mathrm{{s}} \\[1ex]",
        ]
    lines[-1] = lines[-1].removesuffix(r" \\[1ex]")
    lines += [f"% evidence: {latex_text(x)}" for x in (e.evidence.lines() if e.evidence else [])]
    lines += [r"\end{align*}", "", r"\begin{align*}"]
    ops = [rf"t_{{\text{{{name}}}}} &= {formula_text(f, latex=True)}" for name, f in e.op_formulas.items()]
    lines += [" \\\\\n".join(ops), r"\end{align*}"]
    return "\n".join(lines)


LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#", "^": r"\^{}",
    "_": r"\_", "~": r"\~{}", "%": r"\%",
}  # fmt: skip


def latex_text(text: str) -> str:
    """User text (a model's name) as LaTeX shows it: specials escaped, line breaks as spaces, so that it can
    neither end the comment it stands in nor run a command (\\write18, \\input)."""
    return "".join(LATEX_SPECIALS.get(c, c) if c.isprintable() else " " for c in text)


def to_json(e: Explanation) -> str:
    return dumps(document(e))


def dumps(document: dict[str, Any]) -> str:
    """Explanations as strict JSON."""
    return json.dumps(document, indent=2, allow_nan=False)


def document(e: Explanation) -> dict[str, Any]:
    """The explanation as the JSON object `explain --format json` prints."""
    step, step_values = _step_equation(e)

    def quantity(q: Quantity) -> dict[str, Any]:
        return {"symbol": q.symbol.name, "value": q.value, "unit": q.unit, "meaning": q.meaning}

    return {
        "title": e.title,
        "layout": e.layout,
        **({"experts": e.experts} if e.experts else {}),
        **({"workload": list(e.workload)} if e.workload else {}),
        "step_time_s": e.step_time_s,
        "step_formula": step,
        "step_substituted": step_values,
        "dominant_bound": e.dominant,
        "bounds_s": e.bounds,
        "parts": [
            {
                "key": part.key,
                "title": part.title,
                "symbol": PART_SYMBOLS[part.key],
                "value_s": part.value,
                "formula": formula_text(part.formula),
                "formula_latex": formula_text(part.formula, latex=True),
                "substituted": formula_text(part.formula, _values(part.quantities)),
                "quantities": [quantity(q) for q in part.quantities],
                "bounds_s": part.bounds,
                "notes": part.notes,
            }
            for part in e.parts
        ],
        "operation_formulas": {
            name: {"formula": formula_text(f), "formula_latex": formula_text(f, latex=True)}
            for name, f in e.op_formulas.items()
        },
        "operation_constants": [quantity(q) for q in e.op_symbols],
        "operations": [vars(r) for r in e.ops],
        **({"evidence": e.evidence.to_dict() | {"lines": e.evidence.lines()}} if e.evidence else {}),
    }
