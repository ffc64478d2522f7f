"""``kbx serve``: evaluation as an HTTP service for RL trainers (docs/design/serve.md).

A durable SQLite queue (``queue``) feeds an Evaluator per fidelity tier (``tiers``) from
background threads (``dispatch``); the FastAPI app (``app``) accepts batches, answers polls and
streams, and serves ``/metrics``.  Needs the ``serve`` extra.
"""
