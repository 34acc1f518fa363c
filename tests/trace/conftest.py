"""Every ``Run`` a test here makes is closed when the test ends (``tests/_close_runs.py``)."""

from _close_runs import _close_the_runs_a_test_made  # noqa: F401
