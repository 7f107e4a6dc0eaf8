"""The command that installs one of this package's extras (``openvino``, ``tract``, ``fuzz``, ...), written so
that it works where it is printed: the package is not on PyPI, so ``pip install 'onnx-qdq-conformance[X]'``
would fail. Where the installed package came from (pip's record of it, ``direct_url.json``, PEP 610) decides:

- a checkout (an editable install): ``python -m pip install -e '/path/to/checkout[X]'``;
- a local folder or wheel that is still there: ``python -m pip install '/path/to/it[X]'``;
- anything else (an index, a wheel since deleted): the extra's own requirements,
  ``python -m pip install 'openvino>=2025.0'``.

``.ci/wheel-check`` runs the lines a wheel install and a checkout print, each in a new virtualenv.
"""

from __future__ import annotations

import json
import re
import shlex
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

DISTRIBUTION = "onnx-qdq-conformance"


def origin() -> tuple[str, Path] | None:
    """(``editable`` | ``folder`` | ``wheel``, where) of the installed package when pip installed it from a
    local checkout, folder or wheel that still exists; None otherwise."""
    # (the first record that has one: a checkout's own *.egg-info, seen when Python runs from the checkout's
    # folder, has none)
    texts = (d.read_text("direct_url.json") for d in metadata.distributions(name=DISTRIBUTION))
    try:
        doc = json.loads(next((t for t in texts if t), "null"))
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    url = urlparse(str(doc.get("url") or ""))
    if url.scheme != "file":
        return None
    where = Path(unquote(url.path))
    if not where.exists():
        return None
    if (doc.get("dir_info") or {}).get("editable"):
        return "editable", where
    return ("folder" if where.is_dir() else "wheel"), where


def requirements(extra: str) -> list[str]:
    """The requirements the installed package's metadata lists for ``extra`` (markers left out)."""
    try:
        requires = metadata.distribution(DISTRIBUTION).requires or []
    except metadata.PackageNotFoundError:
        return []
    wanted = re.compile(r"""extra\s*==\s*["']""" + re.escape(extra) + r"""["']""")
    return [r.split(";", 1)[0].strip() for r in requires if ";" in r and wanted.search(r.split(";", 1)[1])]


def install_hint(extra: str) -> str:
    """The command line that installs ``extra`` here (see the module's docstring)."""
    found = origin()
    if found is not None:
        kind, where = found
        target = shlex.quote(f"{where}[{extra}]")
        return f"python -m pip install {'-e ' if kind == 'editable' else ''}{target}"
    needed = requirements(extra)
    if needed:
        return "python -m pip install " + " ".join(shlex.quote(r) for r in needed)
    return f"python -m pip install {shlex.quote(f'{DISTRIBUTION}[{extra}]')}"
