"""Every library workload (default scenario) on every shipped template: time per pass and the
ceiling that binds most of the time. A scripted batch study through the public API.

    python experiments/templates_vs_library.py
"""

from __future__ import annotations

import pandas as pd

import dse


def main() -> pd.DataFrame:
    rows = []
    for hw_name in dse.list_hardware():
        hw = dse.hardware(hw_name)
        for wl_name in dse.list_workloads()["name"]:
            wl = dse.workload(wl_name)
            p = dse.predict(wl, hw)
            share = p.time_by_bound()
            rows.append({"hardware": hw_name, "workload": wl.label(), "time_ms": p.time_s * 1e3,
                         "achieved_tflops": p.achieved_flops / 1e12, "main_bound": share.idxmax(),
                         "bound_share": share.max()})
    df = pd.DataFrame(rows)
    print(df.pivot(index="workload", columns="hardware", values="time_ms").to_string(float_format=lambda v: f"{v:.3f}"))
    print("\n(time per pass in ms; main binding ceiling per cell:)")
    print(df.pivot(index="workload", columns="hardware", values="main_bound").to_string())
    return df


if __name__ == "__main__":
    main()
