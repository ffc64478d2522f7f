"""What crosses the trust boundary: the child's signed messages, its output files and their
schema, and the confinement both sides agree on. Imported by both sides; imports neither.
"""
