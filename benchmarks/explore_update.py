"""Server time of one ``dse explore`` update (issue 33: <= 100 ms on the default mix).

Run by hand (not in CI):  python benchmarks/explore_update.py [--config configs/npu.yaml] [--updates 40]

Each update is the page's real request: an HTTP POST of new knob values to Dash's callback endpoint
(``/_dash-update-component``, through Flask's test client, so no socket or browser time is counted), which
re-predicts the mix, rebuilds every figure and table and serializes the response. Knob values are drawn
log-uniform over the config's ranges (seeded); the heatmap is cached per value of the knobs other than
peak and bandwidth (moving those two moves only the star), so a draw of new SRAM also pays a new heatmap: the
table gives both kinds. Also: ``Explorer`` start-up (config, base times, compare candidates, first page).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/npu.yaml")
    ap.add_argument("--updates", type=int, default=40)
    args = ap.parse_args()
    import numpy as np

    from dse.explore.app import UPDATE_OUTPUT, Explorer, build_app, update_request

    t0 = time.perf_counter()
    ex = Explorer(args.config)
    app = build_app(ex)
    t_start = time.perf_counter() - t0
    client = app.server.test_client()
    key = next(k for k in app.callback_map if UPDATE_OUTPUT in k)
    rng = np.random.default_rng(0)

    def post(values: dict) -> float:
        body = update_request(key, values, ex.ctx.base.offchip_name)
        t = time.perf_counter()
        r = client.post("/_dash-update-component", data=json.dumps(body), content_type="application/json")
        dt = time.perf_counter() - t
        assert r.status_code == 200, r.data[:300]
        assert "error: " not in r.get_data(as_text=True).split('"error"')[-1][:40]
        return dt

    post(dict(ex.base_values))  # warm
    moved, resized = [], []
    base = dict(ex.base_values)
    for i in range(args.updates):
        v = dict(base)
        for s in ex.specs:
            if s.name in ("peak_tflops", "dram_bandwidth_tbps") or (i % 2 and s.name == "sram_mib"):
                v[s.name] = float(np.exp(rng.uniform(np.log(s.low), np.log(s.high))))
        v = ex.synced(v, "peak_tflops")
        (resized if i % 2 else moved).append(post(v))
    ms = lambda xs: f"median {statistics.median(xs) * 1e3:.1f} ms, max {max(xs) * 1e3:.1f} ms"  # noqa: E731
    print(f"config {args.config}: {len(ex.ctx.mix.workloads)} workloads, "
          f"{sum(len(w.ops) for w in ex.ctx.mix.workloads)} operator rows")
    print(f"start-up (config, base, candidates, first page): {t_start:.2f} s")
    print(f"update, peak and bandwidth moved ({len(moved)}): {ms(moved)}")
    print(f"update, SRAM moved too (new heatmap, {len(resized)}): {ms(resized)}")


if __name__ == "__main__":
    main()
