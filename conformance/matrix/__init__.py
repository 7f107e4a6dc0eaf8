"""``qdq-conformance matrix``: one backend's releases side by side.

Each release runs the corpus in an environment of its own (:mod:`.environments`: made with uv, wheels cached),
one results file per release (:mod:`.runs`); the history table (findings as rows, releases as columns, each
finding's first bad and first good release) is a view of those files (``reports/release_table.py``); the
version-ranged expectation file is checked or written from them (:mod:`.expectations_writer`).

- :mod:`.releases`: which package a backend's release is, what else a release needs (ONNX Runtime before 1.19
  needs numpy < 2), and ``--versions`` (a list, or a PEP 440 range expanded to the newest patch of each
  minor release the package index offers);
- :mod:`.environments`: an isolated environment per release (the step a test replaces: no network);
- :mod:`.runs`: one release's run in its environment, its results file kept;
- :mod:`.cli`: the command.
"""
