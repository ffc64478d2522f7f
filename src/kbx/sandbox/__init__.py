"""The candidate's child seen from the trusted parent: its settings and environment, spawning
it (fork server or fresh), confining it, following its messages, reading its stderr. Nothing
here imports ``kbx.sandbox.child``: the parent only starts it by module name.
"""
