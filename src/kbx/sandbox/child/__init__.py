"""The code that runs beside the candidate, in its child process (and in the fork server the
children come from): the job runner, calls, launches, op evidence, the guard, confinement.
Nothing it reports is trusted; no trusted module imports it.
"""
