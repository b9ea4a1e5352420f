"""What a mixture-of-experts step assumed about moving tokens to their experts: the recipe's dispatcher and overlap
setting, the scale-up domains an EP group's all-to-alls span and the overlap share that applies there (the same
`group_links` and `moe.ep_overlap` the step priced them with), and the routing imbalance. The prediction record, the
predict table's Experts line and the export's Assumptions all read this one answer."""

from __future__ import annotations

from typing import NamedTuple

from perfmodel.physics import moe
from perfmodel.physics.collectives import group_links
from perfmodel.physics.parallel import Layout
from perfmodel.physics.step import Context


class ExpertExchange(NamedTuple):
    dispatcher: str
    """'flex' (DeepEP/HybridEP) or 'alltoall' (NCCL), as the model records its recipe's."""
    microbatch_overlap: bool
    """The recipe overlaps one micro-batch's all-to-alls with another's compute (ModelSpec.ep_microbatch_overlap)."""
    exchange_exposed: bool
    """The recipe overlaps nothing with the exchange (ModelSpec.ep_exchange_exposed): every all-to-all exposed."""
    domains: int
    """Scale-up domains one EP group spans (1: its all-to-alls stay on the scale-up links)."""
    overlap: float
    """Share of the exchange's compute window that hides it."""
    overlap_name: str
    """The calibrated efficiency `overlap` is: overlap_ep, or overlap_dp across domains."""
    imbalance: float
    """Tokens of the busiest expert rank over the mean (moe_imbalance)."""


def expert_exchange(ctx: Context, layout: Layout) -> ExpertExchange:
    links = group_links(ctx.tiers, ctx.efficiency, float(layout.ep), float(layout.etp))
    domains = int(float(links.domains))
    return ExpertExchange(
        dispatcher=ctx.model.dispatcher,
        microbatch_overlap=ctx.model.ep_microbatch_overlap,
        exchange_exposed=ctx.model.ep_exchange_exposed,
        domains=domains,
        overlap=float(moe.ep_overlap(ctx.efficiency, links)),
        overlap_name=moe.ep_overlap_parameter(links),
        imbalance=ctx.imbalance,
    )
