"""The operator table builder (dse.workloads.ops.table)."""


def test_compaction_equals_a_pandas_groupby_of_the_rows() -> None:
    """The Python-side merge of identical operators gives the table pandas' groupby gave (issue 17)."""
    import pandas as pd

    from dse.workloads import library, ops

    captured = []
    real = ops.table

    def spy(rows, **kw):
        captured.append(list(rows))
        return real(rows, **kw)

    ops.table = spy
    try:
        for name, kw in (("llama2-7b", {"phase": "decode"}), ("resnet50", {}), ("bert-base", {"phase": "training"})):
            library._expand(name, **kw)
        library._expand("llama2-7b", plan={"tp": 4}, phase="prefill")
    finally:
        ops.table = real
    assert captured
    for rows in captured:
        full = ops.table(rows, compact=False)
        keys = [c for c in ops.COLUMNS if c not in ("name", "count")]
        ref = (full.groupby(keys, sort=False, dropna=False)
               .agg(name=("name", lambda s: str(s.unique()[0]) if s.nunique() == 1
                          else f"{s.unique()[0]} (+{s.nunique() - 1} same shape)"), count=("count", "sum"))
               .reset_index()[ops.COLUMNS])
        got = ops.table(rows)
        assert len(got) < len(full) or len(got) == len(full)
        pd.testing.assert_frame_equal(got, ref, check_dtype=False)
