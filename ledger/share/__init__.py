"""Sharing runs between ledgers: reproducibility packages (``ledger export``/``import``).

``closure`` decides what a set of runs needs (the refs and, through gc's reachability, the
objects); ``package`` writes and reads the one-file package; ``door`` lets foreign refs into
a local ledger under an ``import`` log line that names their origin.
"""
