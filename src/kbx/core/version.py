"""kbx's version, recorded in every result's fingerprint and in the service's cache keys."""

__version__ = "0.1.0"
