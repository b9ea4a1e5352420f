"""What a mixture-of-experts prediction assumed about its experts, for the predict table and the export's
Assumptions: routing, the folded expert layout, the dispatcher, where its all-to-alls run and the overlap share that
applies (the same context, `group_links` and `moe.ep_overlap` the step priced them with)."""

from __future__ import annotations

from dataclasses import dataclass

from perfmodel.physics import moe
from perfmodel.physics.collectives import group_links
from perfmodel.planning.predict import Prediction, context_for


@dataclass(frozen=True)
class Experts:
    routing: str
    """'256 routed, top-8 + 1 shared, in 58 of 61 layers'."""
    layout: str
    """'EP8 x ETP1 x expert DP64, 32 experts per EP rank'."""
    dispatcher: str
    domains: int
    """Scale-up domains the EP group spans (1: its all-to-alls stay on the scale-up links)."""
    overlap: float
    overlap_name: str
    """The efficiency field `overlap` is: overlap_ep, or overlap_ep_scaleout across domains."""
    hidden: str
    """Behind what the exchange hides, with the share, or why it does not."""
    imbalance: float


def experts(p: Prediction) -> Experts:
    md, lo = p.model, p.layout
    ctx = context_for(p.scenario)
    links = group_links(ctx.tiers, ctx.efficiency, float(lo.ep), float(lo.etp))
    domains = int(float(links.domains))
    overlap = float(moe.ep_overlap(ctx.efficiency, links))
    name = "overlap_ep_scaleout" if domains > 1 else "overlap_ep"
    if moe.hides_behind_layer(md):
        why = "the flex dispatcher" if md.dispatcher == "flex" else "the EP overlap of two micro-batches"
        hidden = f"hidden behind the layer's compute up to {overlap:.0%} ({name}; {why})"
    elif md.shared_experts:
        hidden = f"hidden behind the shared experts' compute only up to {overlap:.0%} ({name})"
    else:
        hidden = "not hidden (the 'alltoall' dispatcher overlaps shared experts only; this model has none)"
    shared = f" + {md.shared_experts} shared" if md.shared_experts else ""
    edp = lo.tp * lo.cp * lo.dp // (lo.ep * lo.etp)
    local = md.experts // lo.ep
    return Experts(
        routing=f"{md.experts} routed, top-{md.top_k}{shared}, in {md.moe_layers} of {md.layers} layers",
        layout=f"EP{lo.ep} x ETP{lo.etp} x expert DP{edp}, {local} expert{'s' * (local > 1)} per EP rank",
        dispatcher=md.dispatcher,
        domains=domains,
        overlap=overlap,
        overlap_name=name,
        hidden=hidden,
        imbalance=ctx.imbalance,
    )


def experts_text(p: Prediction) -> str:
    """The expert assumptions in one sentence (explain's JSON `experts`)."""
    e = experts(p)
    where = f"across {e.domains} scale-up domains (NICs)" if e.domains > 1 else "inside one scale-up domain"
    imbalance = f"; busiest rank {e.imbalance:g}x the mean tokens" if e.imbalance != 1 else ""
    return f"{e.routing}; {e.layout}; '{e.dispatcher}' dispatcher, all-to-all {where}, {e.hidden}{imbalance}"


def experts_line(p: Prediction) -> str:
    """The predict and explain tables' line below the layout, which shows neither ETP 1, expert DP, dispatcher nor
    overlap."""
    return f"Experts: {experts_text(p)}"
