"""What a run is made of, above the suite: candidates read from sources, result records, the
configuration and its tuning knobs, start-up marks.
"""
