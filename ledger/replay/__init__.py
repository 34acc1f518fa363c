"""Replay: rebuild a recorded run, run it again and say whether it reproduced.

``ledger.replay.compare`` holds the comparators that decide, file by file, whether a replay's
outputs match the original's (bitwise or within tolerance).
"""
