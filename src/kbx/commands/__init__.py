"""The commands a person runs (``kbx eval``, ``validate``, ``show``, ``report``) and what
they share on the terminal; ``kbx.cli`` parses the command line and calls them.
"""
