"""The documents a packed sequence holds, and what document masking leaves of causal attention.

Packed sequences with document masking, as Megatron and Transformer Engine run them (THD layout, cu_seqlens): each
query attends only to the earlier keys of its own document. A document of d tokens costs d^2 / 2 query-key pairs
instead of the packed sequence's s^2 / 2 shared out over its tokens; a document longer than the sequence is split at
the sequence boundary (floor(d / s) pieces of s and the remainder), as packing cuts it. The MLP, the projections
and everything else see every token whatever the documents. Plain float arithmetic on a distribution, worked out
once per scenario.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from perfmodel.inputs.record import bounded, given_field, record

PROFILES: dict[str, tuple[tuple[int, ...], tuple[float, ...]] | None] = {"pretrain": None}
"""Named document-length profiles: (lengths, shares of documents) with their source, or None for documents at least
as long as the sequence (pre-training on long web documents: every query sees s/2 keys on average, today's
default). No public document-length histogram of a fine-tuning data set is carried here yet, so no SFT profile
is bundled: give the histogram of your own data (`lengths` and `shares`)."""
SHARE_TOLERANCE = 1e-6
MAX_LENGTH = 10_000_000
"""A document's length in tokens, as the sequence length's limit (a longer one is split at the sequence anyway)."""
MAX_BINS = 10_000
"""A histogram's lengths: attention is priced per length, and a data set's histogram has tens to hundreds of bins."""


@record
class Documents:
    """The documents packed into each sequence ([documents] table): one of `profile`, `length`, or `lengths` with
    `shares`. Attention is priced over documents (document masking); everything else over all tokens."""

    profile: str | None = None
    """A named profile: 'pretrain' (documents at least as long as the sequence; the default)."""
    length: int | None = bounded(None, ge=1, le=MAX_LENGTH)
    """Every document this many tokens (at most the sequence length): short documents packed whole."""
    lengths: tuple[int, ...] = bounded((), max_length=MAX_BINS, items={"le": MAX_LENGTH})
    """A histogram's document lengths in tokens; a length above the sequence is split at the sequence boundary."""
    shares: tuple[float, ...] = bounded((), max_length=MAX_BINS)
    """The share of documents (not of tokens) at each of `lengths`; they sum to 1."""
    given: frozenset[str] | None = given_field()

    def __post_init__(self) -> None:
        """One form, a known profile, and a histogram of positive lengths whose shares sum to 1 (a ValueError,
        which pydantic reports as the table's own check)."""
        forms = [name for name in ("profile", "length", "lengths") if getattr(self, name) not in (None, ())]
        if len(forms) > 1:
            raise ValueError(f"{' and '.join(forms)} both give the documents: give one")
        if self.profile is not None and self.profile not in PROFILES:
            raise ValueError(f"profile: unknown profile '{self.profile}'; known: {', '.join(PROFILES)}")
        if len(self.lengths) != len(self.shares):
            raise ValueError(f"lengths has {len(self.lengths)} values and shares {len(self.shares)}: one share each")
        if any(length < 1 for length in self.lengths):
            raise ValueError("lengths: every document length must be a positive number of tokens")
        if any(not (math.isfinite(share) and share > 0) for share in self.shares):
            raise ValueError("shares: every share must be a positive finite number")
        if self.shares and abs(sum(self.shares) - 1) > SHARE_TOLERANCE:
            raise ValueError(f"shares: the shares of documents must sum to 1 (they sum to {sum(self.shares):.6g})")

    @property
    def histogram(self) -> tuple[tuple[int, ...], tuple[float, ...]] | None:
        """(lengths, shares of documents), or None for documents at least as long as the sequence."""
        if self.length is not None:
            return (self.length,), (1.0,)
        if self.lengths:
            return self.lengths, self.shares
        return PROFILES[self.profile or "pretrain"]

    @property
    def label(self) -> str:
        """How outputs name the distribution that priced the attention."""
        if self.length is not None:
            return f"documents of {self.length:,} tokens"
        if self.lengths:
            return f"document histogram ({len(self.lengths)} lengths)"
        return self.profile or "pretrain"


class Packing(NamedTuple):
    """Causal attention of a packed sequence under document masking, per token: `keys` keys per query on average
    (s/2 without documents), and `length` the tokens of the document (piece) a kernel works on, weighted as the
    kernel's time is: the sum of squared piece lengths over the sum of lengths (= 2 x keys). With an efficiency
    of length / (length + half) per piece, pricing all pieces at this one length gives the same time."""

    keys: float
    length: float
    pieces: tuple[tuple[float, float], ...]
    """(piece length in tokens, pieces per token of data): what the windowed layers' keys are worked out from."""

    def window_keys(self, window: float) -> float:
        """Keys per query of a sliding-window layer: a piece of l <= W tokens costs l^2 / 2 pairs, a longer one
        W l - W^2 / 2 (ModelSpec.mean_keys for one piece of the whole sequence)."""
        return sum(weight * _window_pairs(length, window) for length, weight in self.pieces)


def _window_pairs(length: float, window: float) -> float:
    return length * length / 2 if length <= window else window * length - window * window / 2


def packing(documents: Documents, seq_len: int) -> Packing | None:
    """The attention a scenario's documents leave at `seq_len`, or None for documents at least as long as the
    sequence (every sequence one causal sequence: the formulas' own s/2 keys, bit for bit)."""
    histogram = documents.histogram
    if histogram is None:
        return None
    counts: dict[float, float] = {}
    tokens = 0.0
    for length, share in zip(*histogram, strict=True):
        whole, rest = divmod(length, seq_len)
        counts[float(seq_len)] = counts.get(float(seq_len), 0.0) + share * whole
        if rest:
            counts[float(rest)] = counts.get(float(rest), 0.0) + share
        tokens += share * length
    pieces = tuple((length, count / tokens) for length, count in counts.items() if count)
    keys = sum(weight * length * length / 2 for length, weight in pieces)
    return Packing(keys, 2 * keys, pieces)
