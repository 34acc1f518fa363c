"""What ``ledger record`` freezes before launch: code (git), config, data digests, environment.

One module per kind of capture; nothing is re-exported here, import the module you need.
"""
