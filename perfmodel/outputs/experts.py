"""What a mixture-of-experts prediction assumed about its experts, for the predict and explain tables' Experts line,
explain's JSON and the export's Assumptions: routing, the folded expert layout, and the exchange the step priced
(the prediction's `expert_exchange`: dispatcher, where its all-to-alls run and the overlap share that applies)."""

from __future__ import annotations

from dataclasses import dataclass

from perfmodel.physics import moe
from perfmodel.physics.expert_exchange import ExpertExchange
from perfmodel.planning.predict import Prediction


@dataclass(frozen=True)
class Experts:
    routing: str
    """'256 routed, top-8 + 1 shared, in 58 of 61 layers'."""
    layout: str
    """'EP8 x ETP1 x expert DP64, 32 experts per EP rank'."""
    exchange: ExpertExchange
    hidden: str
    """Behind what the exchange hides, with the share, or why it does not."""


def experts(p: Prediction) -> Experts:
    md, lo, e = p.model, p.layout, p.expert_exchange
    assert e is not None, "a MoE model's prediction carries its exchange"
    beside = moe.exchange_beside(md)
    if beside == "nothing":
        hidden = f"not hidden ({moe.NOTHING_BESIDE})"
    elif beside == "layer":
        why = "the flex dispatcher" if md.dispatcher == "flex" else "the EP overlap of two micro-batches"
        hidden = f"hidden behind the layer's compute up to {e.overlap:.0%} ({e.overlap_name}; {why})"
    elif md.shared_experts:
        hidden = f"hidden behind the shared experts' compute only up to {e.overlap:.0%} ({e.overlap_name})"
    else:
        hidden = "not hidden (the 'alltoall' dispatcher overlaps shared experts only; this model has none)"
    shared = f" + {md.shared_experts} shared" if md.shared_experts else ""
    local = md.experts // lo.ep
    mtp = ""
    if md.mtp_pattern:  # a hybrid's MTP depths: their MoE layers exchange tokens too
        mtp = f", and {md.mtp_layers} MTP depths of '{md.mtp_pattern}'" + (
            " sharing one set of weights" if md.mtp_shared_weights else ""
        )
    return Experts(
        routing=f"{md.experts} routed, top-{md.top_k}{shared}, in {md.moe_layers} of {md.layers} layers{mtp}",
        layout=f"EP{lo.ep} x ETP{lo.etp} x expert DP{lo.expert_dp}, {local} expert{'s' * (local > 1)} per EP rank",
        exchange=e,
        hidden=hidden,
    )


def experts_text(p: Prediction) -> str:
    """The expert assumptions in one sentence: the predict and explain tables' line below the layout (which shows
    neither ETP 1, expert DP, dispatcher nor overlap) and explain's JSON `experts`."""
    e = experts(p)
    x = e.exchange
    where = f"across {x.domains} scale-up domains (NICs)" if x.domains > 1 else "inside one scale-up domain"
    imbalance = f"; busiest rank {x.imbalance:g}x the mean tokens" if x.imbalance != 1 else ""
    return (
        f"{e.routing}{_dropping(p)}; {e.layout}; '{x.dispatcher}' dispatcher, all-to-all {where}, {e.hidden}{imbalance}"
    )


def _dropping(p: Prediction) -> str:
    """Token dropping, where the model drops: the capacity factor, and whether every expert is padded to it."""
    md = p.model
    if not md.capacity_factor:
        return ""
    padded = ", every expert padded to it" if md.pad_to_capacity else ""
    return f", tokens beyond capacity factor {md.capacity_factor:g} dropped{padded}"
