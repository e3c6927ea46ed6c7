"""``dse.best_plan`` against a hand grid (issue 31: LLaMA-2-70B training, batch 64, seq 4096, 32 H100 of dgx-h100),
then the memory of a large MoE search.

Run by hand (not in CI):  python benchmarks/best_plan.py

Times the search (every candidate plan expanded and predicted in chunked ``mix_times`` calls), then predicts each plan of
the hand grid one by one with ``dse.predict`` (tp, pp in 1..8 with tp x pp dividing 32, the rest data parallel;
ZeRO 0/1/3; recompute none/selective/full; micro-batches 8/16/32 where they divide a replica's batch and are at
least pp) and checks that the search's plan fits and ties or beats every fitting plan of the grid.
"""

from __future__ import annotations

import itertools
import time


def main() -> None:
    import dse

    scen = {"phase": "training", "batch": 64, "seq": 4096, "dtype": "bf16"}
    wl = dse.workload("llama2-70b", **scen)
    t0 = time.perf_counter()
    r = dse.best_plan(wl, "dgx-h100", 32)
    t_search = time.perf_counter() - t0
    print(f"search: {len(r.table)} candidates, {int(r.table['fits'].sum())} fit, {t_search:.1f} s; best "
          f"{r.best.label()} zero {r.best.zero} mb {r.best.m}: {r.prediction.time_s:.4f} s per step, "
          f"{r.prediction.workload.memory_bytes / 1e9:.1f} GB per chip")
    t0 = time.perf_counter()
    best_grid, n, fits = None, 0, 0
    recomputes = ("none", "minimal", "selective", "full")
    for tp, pp, zero, rec, mb in itertools.product(range(1, 9), range(1, 9), (0, 1, 3), recomputes, (8, 16, 32)):
        if 32 % (tp * pp) or (pp > 1 and mb < pp):
            continue
        dp = 32 // (tp * pp)
        if 64 % dp or (64 // dp) % mb:
            continue
        try:
            p = dse.predict(dse.workload("llama2-70b", plan={"tp": tp, "pp": pp, "dp": dp, "zero": zero,
                                                             "recompute": rec, "microbatches": mb}, **scen), "dgx-h100")
        except dse.DseError:
            continue
        n += 1
        if p.fits:
            fits += 1
            if best_grid is None or p.time_s < best_grid[0]:
                best_grid = (p.time_s, p.workload.plan.label(), zero, mb)
    t_grid = time.perf_counter() - t0
    print(f"hand grid: {n} plans, {fits} fit, {t_grid:.1f} s one by one; fastest fitting {best_grid[1]} zero "
          f"{best_grid[2]} mb {best_grid[3]}: {best_grid[0]:.4f} s")
    ok = r.prediction.fits and r.prediction.time_s <= best_grid[0] * (1 + 1e-9)
    print(f"search ties or beats the grid: {ok} ({(best_grid[0] / r.prediction.time_s - 1) * 100:+.2f} % grid vs search)")
    moe()


def moe() -> None:
    """Memory of a large search: Mixtral 8x7B training on 16 H100 (5288 candidates with expert parallelism). One
    vectorized call over every candidate held an [ops, candidates] membership matrix that grew as the square of the
    candidates (past 24 GB, killed); predicted in chunks of ``dse.predict.CANDIDATE_CHUNK`` it stays under 1 GB."""
    import resource

    import dse

    wl = dse.workload("mixtral-8x7b", phase="training", batch=64, seq=4096)
    t0 = time.perf_counter()
    r = dse.best_plan(wl, "dgx-h100", 16)
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # KiB on Linux
    print(f"moe search: {len(r.table)} candidates, {int(r.table['fits'].sum())} fit, {time.perf_counter() - t0:.1f} s; "
          f"best {r.best.label()}: {r.prediction.time_s:.4f} s per step; peak memory of this process {peak_gb:.2f} GB")


if __name__ == "__main__":
    main()
