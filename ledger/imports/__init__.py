"""Runs imported from other trackers (``ledger import mlflow``): sealed run records that carry
their origin in ``imported`` and have no contract, so they are shown, compared and audited
like recorded runs but never replayed (``ledger.run.imported``)."""
