"""Parallel layouts (TP, CP, DP, PP with interleaving, EP) and the rules a valid layout follows.

Ranks are placed in Megatron order: TP fastest, then CP, then DP, then PP, so a group's stride is the product of
the sizes placed before it. CP ranks hold the same weights, so gradients are reduced over DP x CP.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfmodel.errors import InfeasibleLayout
from perfmodel.models import ModelSpec
from perfmodel.schedule import UNEVEN_EXTRA_UNITS

RECOMPUTE_MODES = ("none", "selective", "full")
ZERO_STAGES = (0, 1, 2, 3)


@dataclass(frozen=True)
class Layout:
    tp: int
    pp: int
    cp: int
    dp: int
    vp: int
    ep: int
    mbs: int
    gbs: int
    seq_len: int
    recompute: str
    zero: int

    @property
    def n_gpus(self) -> int:
        return self.tp * self.pp * self.cp * self.dp

    @property
    def microbatches(self) -> int:
        """Micro-batches each pipeline runs per step (gradient-accumulation steps without PP)."""
        return self.gbs // (self.mbs * self.dp)

    def describe(self) -> str:
        return (
            f"TP{self.tp} PP{self.pp} VP{self.vp} CP{self.cp} DP{self.dp}"
            + (f" EP{self.ep}" if self.ep > 1 else "")
            + f", MBS {self.mbs}, GBS {self.gbs}, seq {self.seq_len}, recompute {self.recompute}, ZeRO-{self.zero}"
        )


def violations(layout: Layout, model: ModelSpec, n_gpus: int) -> list[str]:
    """Every rule the layout breaks, each as a sentence naming the numbers involved (empty when valid)."""
    lo, md = layout, model
    model_parallel = lo.tp * lo.pp * lo.cp
    rules = [
        (
            n_gpus % model_parallel == 0,
            f"TP {lo.tp} x PP {lo.pp} x CP {lo.cp} = {model_parallel} does not divide the {n_gpus} GPUs",
        ),
        (
            n_gpus % model_parallel or lo.n_gpus == n_gpus,
            f"TP x PP x CP x DP = {lo.n_gpus} must equal the {n_gpus} GPUs",
        ),
        (md.heads % lo.tp == 0, f"TP {lo.tp} must divide the {md.heads} attention heads"),
        (md.kv_heads % lo.tp == 0, f"TP {lo.tp} must divide the {md.kv_heads} KV heads (query groups)"),
        (md.ffn % lo.tp == 0, f"TP {lo.tp} must divide the FFN width {md.ffn}"),
        (lo.seq_len % lo.tp == 0, f"TP {lo.tp} must divide the sequence length {lo.seq_len} (sequence parallelism)"),
        (
            lo.cp == 1 or lo.seq_len % (2 * lo.cp * lo.tp) == 0,
            f"CP {lo.cp} needs the sequence length {lo.seq_len} divisible by 2 x CP x TP = {2 * lo.cp * lo.tp} "
            "(load-balanced causal chunks)",
        ),
        (
            lo.pp * lo.vp <= md.layers + UNEVEN_EXTRA_UNITS,
            f"PP {lo.pp} x VP {lo.vp} = {lo.pp * lo.vp} stages exceed the {md.layers} layers "
            f"(+{UNEVEN_EXTRA_UNITS} for the embedding and loss stages)",
        ),
        (lo.vp == 1 or lo.pp > 1, f"VP {lo.vp} (interleaving) needs PP > 1"),
        (
            lo.gbs % (lo.mbs * lo.dp) == 0,
            f"GBS {lo.gbs} must be divisible by MBS {lo.mbs} x DP {lo.dp} = {lo.mbs * lo.dp}",
        ),
        (lo.ep == 1, f"EP {lo.ep} needs a mixture-of-experts model; {md.id} is dense (use EP 1)"),
        (lo.zero < 3 or lo.pp == 1, f"ZeRO-3/FSDP is not combined with pipeline parallelism (PP {lo.pp})"),
        (lo.recompute in RECOMPUTE_MODES, f"recompute '{lo.recompute}' must be one of {', '.join(RECOMPUTE_MODES)}"),
        (lo.zero in ZERO_STAGES, f"ZeRO stage {lo.zero} must be one of 0, 1, 2, 3"),
    ]
    return [message for ok, message in rules if not ok]


def check(layout: Layout, model: ModelSpec, n_gpus: int) -> None:
    broken = violations(layout, model, n_gpus)
    if broken:
        raise InfeasibleLayout(f"invalid layout {layout.describe()}: {'; '.join(broken)}")
