"""``kbx generate``: the paper's generation methods (one-shot, GEAK, KernelAgent) over any
OpenAI-compatible endpoint, with kbx's evaluator in the loop (docs/design/generate.md)."""
