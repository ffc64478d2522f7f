"""Evaluation of one candidate: trusted reference, sandboxed child, comparison, timing."""
