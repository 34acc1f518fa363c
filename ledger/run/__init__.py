"""The run layer: freeze a contract, execute the command, seal the record; find, show, diff runs.

Modules, lowest first (each imports only modules listed before it; the ``run-layers``
contract in pyproject.toml holds them to it):

* ``ids``: run ids and their refs; ``options``: ``RecordOptions``, what a recording is asked;
* ``lineage``: replays and their originals;
* ``execute``: run the child command, tee and time its output;
  ``find``: resolve an id, prefix, short id or name to a run, list runs;
  ``series``: a run's metric series; ``linked``: the check and gate records bound to a run;
* ``contract``: freeze what a run needs (code, config, data, environment) into a contract;
  ``show``, ``diff``: describe one run, compare two;
  ``project_config``: project defaults for ``ledger record``;
* ``record``: wrap a command: freeze its contract, execute it, seal its run record;
* ``start``: the same from inside a Python process (``ledger.start()``).

Nothing here is imported by this package's ``__init__``: ``import ledger.run.find`` stays cheap.
"""
