"""outputs/columns.table prints what tabulate prints, without importing it for ASCII cells."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from tabulate import tabulate

from perfmodel.outputs.columns import table

TEXT = st.text(alphabet=st.sampled_from("ab1.,%$ -()xé中"), max_size=12)


@given(
    st.lists(st.lists(TEXT, min_size=1, max_size=4), min_size=1, max_size=5),
    st.booleans(),
    st.lists(st.sampled_from(["left", "right"]), max_size=4),
    st.data(),
)
def test_the_table_is_tabulates(rows: list[list[str]], titled: bool, colalign: list[str], data: st.DataObject) -> None:
    """Ragged rows, cells with spaces to strip, wide (CJK) and accented characters, headers or none."""
    count = max(len(row) for row in rows)
    headers = data.draw(st.lists(TEXT, min_size=count, max_size=count)) if titled else []
    fmt = "simple" if headers else "plain"
    expected = tabulate(rows, headers=headers, tablefmt=fmt, colalign=colalign or None, disable_numparse=True)
    assert table(rows, headers, colalign) == expected
