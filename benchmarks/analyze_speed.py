"""Time kbx.analyze on 100,000 synthetic result rows with B = 10,000 bootstrap resamples.

Target: at most 30 s on the 2-core development machine. BLAS runs single-threaded: the bootstrap's
products are small, and on a shared machine threaded OpenBLAS spends its time contending.
    PYTHONPATH=src python benchmarks/analyze_speed.py [--resamples 10000]
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402

from kbx.analyze import deviance, dynamics, fill, speedups, spread, stats, synthetic  # noqa: E402


def analyze(table, resamples: int) -> dict[str, float]:
    """Every statistic once; seconds per statistic."""
    times: dict[str, float] = {}
    start = time.perf_counter()
    rs = stats.resampler(table, resamples)
    times["resampler"] = time.perf_counter() - start
    steps = {
        "rates": lambda: stats.rates(table, rs),
        "category_method": lambda: stats.category_method(table, rs),
        "solved": lambda: stats.solved(table, rs),
        "quantization": lambda: stats.quantization(table, rs),
        "aggregates": lambda: (
            speedups.aggregates(table, rs),
            speedups.aggregates(table, rs, ("category",)),
        ),
        "slower_share": lambda: [
            speedups.slower_share(table, rs, by) for by in ((), ("method",), ("category",))
        ],
        "fast_p": lambda: speedups.fast_p(table, rs),
        "fast_p_curve": lambda: speedups.fast_p(table, rs, fill.CURVE_P),
        "efficiency": lambda: speedups.efficiency(table, rs),
        "at_k": lambda: speedups.at_k(table, rs, ks=(1, 5, 10), grid=(1.0,)),
        "deviance": lambda: deviance.deviance(table, rs),
        "dynamics": lambda: dynamics.transitions(table, rs),
        "spread": lambda: spread.hardware(table, rs),
    }
    for name, step in steps.items():
        start = time.perf_counter()
        step()
        times[name] = time.perf_counter() - start
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args()
    # 184 tasks x 5 methods x 3 rounds x 10 samples x 4 GPUs = 110,400 rows
    table = synthetic.generate(synthetic.planted(rounds=3, samples=10, gpus=4))
    start = time.perf_counter()
    times = analyze(table, args.resamples)
    total = time.perf_counter() - start
    for name, seconds in times.items():
        print(f"{name:16s} {seconds:6.2f} s")
    print(f"{len(table):,} rows, B = {args.resamples:,}: {total:.1f} s (target <= 30 s)")


if __name__ == "__main__":
    main()
