"""The GPU seen by every process that uses one: the per-GPU lock and its waits, timing cores,
the clock and benchmark timing, the baseline process pool, the fingerprint and peaks.
"""
