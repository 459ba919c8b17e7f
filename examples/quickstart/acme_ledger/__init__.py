"""acme_ledger: an invented internal billing library, the quickstart's training target.

Its conventions live in :mod:`acme_ledger.core`; every other module is a set of small
public functions, each covered by three tests in ``examples/quickstart/tests``.
"""
