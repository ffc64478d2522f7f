"""Statistics over kbx runs and KernelBench-X metrics (docs: methods.md 7.4).

``load`` builds one table with a row per (task, method, model, round, sample, gpu) over the full
suite, missing rows as failures; ``stats``, ``deviance``, ``dynamics`` and ``spread`` compute the
statistics from it as pure functions, each with ``n`` and a bootstrap interval over tasks
resampled within category (``bootstrap``); ``synthetic`` makes tables with planted effects.
"""
