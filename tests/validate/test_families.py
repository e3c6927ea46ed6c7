import pandas as pd

import dse
from dse.validate import bands, families


def test_families_are_the_ones_bands_and_suite_use() -> None:
    assert bands.family_of is families.family_of and bands.out_of_sample is families.out_of_sample
    assert families.family_of(dse.gemm(8, 8, 8)) == "gemm"
    assert families.family_of(dse.workload("copy:1000")) == "copy"
    assert families.family_of(dse.workload("llama2-7b", phase="decode", batch=1, context=128)) == "decode"


def test_out_of_sample_keeps_covered_rows_that_set_no_coefficient() -> None:
    res = pd.DataFrame({"status": ["covered", "covered", "not covered", "covered"],
                        "fitted_into": ["", "a100.matrix_efficiency", "", None]})
    assert list(families.out_of_sample(res).index) == [0, 3]
    assert list(families.out_of_sample(res.drop(columns="fitted_into")).index) == [0, 1, 3]
