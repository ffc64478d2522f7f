"""kbx: an evaluation harness for LLM-generated Triton kernels (the KernelBench-X suite)."""

__version__ = "0.1.0"
