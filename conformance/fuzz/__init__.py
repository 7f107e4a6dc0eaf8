"""``qdq-conformance fuzz``: property-based search (Hypothesis) for cases the corpus does not hold yet.

A fuzzed example is a case *description* (:mod:`.describe`), drawn by :mod:`.strategies`, turned into the same
case template the YAML path expands (so the oracle, the readings classifier and the status decision are the
corpus's), run through the runner's backend worker pool (:mod:`.search`), shrunk by Hypothesis, grouped by a
signature, and kept as a regression case file with its model, data and repro (:mod:`.export`). No import-time
side effects.
"""
