"""Pinned end-to-end results: a few model x hardware pairs through the public API.

``python -m tests.pinned_cases`` rewrites ``tests/pinned.csv`` from the current code; ``tests/test_pinned.py``
compares the code against the file. A change to the predictor, the area model or a template that moves a
pinned figure fails the test until the file is regenerated, so the change shows up, with its size, in the
diff of ``tests/pinned.csv`` under review.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

PINNED = Path(__file__).with_name("pinned.csv")
FIELDS = ("case", "quantity", "unit", "value")


def _predict(model: str, hardware: str, **kw) -> Callable[[], list[tuple[str, str, float | str]]]:
    plan = {k: kw.pop(k) for k in ("chips", "tp", "pp", "dp", "microbatches", "recompute", "interleave") if k in kw}

    def run() -> list[tuple[str, str, float | str]]:
        import dse

        p = dse.predict(dse.workload(model, **kw), hardware, **plan)
        shares = p.time_by_bound()
        return [("time_s", "s", float(p.time_s)), ("achieved_tflops", "TFLOP/s", float(p.achieved_flops) / 1e12),
                ("binding_ceiling", "", str(shares.idxmax()))]
    return run


def _area(hardware: str) -> Callable[[], list[tuple[str, str, float | str]]]:
    def run() -> list[tuple[str, str, float | str]]:
        import dse

        return [("area_mm2", "mm2", float(dse.area(hardware).total_mm2))]
    return run


#: case name -> computation (kept small: the file is read by a human in a diff)
CASES: dict[str, Callable[[], list[tuple[str, str, float | str]]]] = {
    "llama2-7b decode b1 ctx1024 bf16 @ a100-80gb": _predict("llama2-7b", "a100-80gb", phase="decode", batch=1,
                                                             context=1024, dtype="bf16"),
    "llama2-7b prefill b1 s2048 bf16 @ h100-sxm": _predict("llama2-7b", "h100-sxm", phase="prefill", batch=1,
                                                           seq=2048, dtype="bf16"),
    "resnet50 forward b64 bf16 @ a100-80gb": _predict("resnet50", "a100-80gb", phase="forward", batch=64,
                                                      dtype="bf16"),
    "bert-base forward b8 s128 bf16 @ tpu-v5e": _predict("bert-base", "tpu-v5e", phase="forward", batch=8, seq=128,
                                                         dtype="bf16"),
    "gpt3-175b training b64 @ dgx-a100 tp8 pp8": _predict("gpt3-175b", "dgx-a100", phase="training", batch=64,
                                                          seq=2048, dtype="bf16", chips=64, tp=8, pp=8, dp=1),
    "gpt3-175b training b64 @ dgx-a100 tp8 pp8 v3 full recompute": _predict(
        "gpt3-175b", "dgx-a100", phase="training", batch=64, seq=2048, dtype="bf16", chips=64, tp=8, pp=8, dp=1,
        microbatches=64, interleave=3, recompute="full"),
    "llama2-7b serving b16 in512 out128 bf16 @ h100-sxm": _predict("llama2-7b", "h100-sxm", phase="serving", batch=16,
                                                                    input_len=512, output_len=128, dtype="bf16"),
    "gemm 1024^3 bf16 @ tpu7x (a lone GEMM's pipeline fill and drain)": _predict("gemm:1024x1024x1024", "tpu7x",
                                                                                 dtype="bf16"),
    "resnet50 forward b16 bf16 @ tt-n150 (a program per operator)": _predict("resnet50", "tt-n150", phase="forward",
                                                                            batch=16, dtype="bf16",
                                                                            fuse_elementwise=True),
    "npu-7nm area": _area("npu-7nm"),
    "h100-sxm area": _area("h100-sxm"),
}


def compute() -> list[dict[str, str]]:
    """Every case's quantities as CSV rows (floats written with 6 significant digits)."""
    rows = []
    for case, fn in CASES.items():
        for quantity, unit, value in fn():
            rows.append({"case": case, "quantity": quantity, "unit": unit,
                         "value": f"{value:.6g}" if isinstance(value, float) else value})
    return rows


def main() -> None:
    rows = compute()
    with PINNED.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} pinned results -> {PINNED}")


if __name__ == "__main__":
    main()
