"""Conformance cases made from a model's own quantization nodes (``qdq-conformance cases --from-model``).

:mod:`.nodes` reads each quantization node (the checker's walk: types, shapes, constants, findings) into a
node configuration or the reason it has none; :mod:`.shapes` makes its shapes concrete and slices its scale
and zero point; :mod:`.templates` writes the case-file templates of a configuration (the corpus's own schema,
recipes and status rules); :mod:`.graphs` finds the small graphs around the nodes and
:mod:`.graph_templates` writes their templates; :mod:`.convert` ties them together and :mod:`.output` writes
the folder and its accounting.
"""
