"""The run layer: freeze a contract, execute the command, seal the record; find, show, diff runs.

Modules, lowest first (each imports only those before it):

* ``execute``: run the child command, tee and time its output;
* ``find``: run ids, refs, and resolving an id, prefix, short id or name to a run;
* ``lineage``: replays and their originals;
* ``series``: a run's metric series; ``linked``: the check and gate records bound to a run;
* ``project_config``: project defaults for ``ledger record``;
* ``contract``: freeze what a run needs (code, config, data, environment) into a contract;
* ``record``: wrap a command: freeze its contract, execute it, seal its run record;
* ``start``: the same from inside a Python process (``ledger.start()``);
* ``show``, ``diff``: describe one run, compare two.

Nothing here is imported by this package's ``__init__``: ``import ledger.run.find`` stays cheap.
"""
