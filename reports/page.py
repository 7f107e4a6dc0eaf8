"""What every HTML page of the reports shares: the template environment and the packing of embedded data.

The report and the scoreboard (:mod:`.render`) and the diff page (:mod:`.diff`) import it; it imports nothing
of theirs (so no module of the reports imports another in a circle).
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape

from qdq_conformance.resources import templates_dir
from qdq_conformance.results import JSONValue

TEMPLATES = templates_dir()


def environment() -> Environment:
    """The Jinja environment of the report templates (autoescaped)."""
    return Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html", "j2"]),
                       trim_blocks=True, lstrip_blocks=True)


def pack(obj: object) -> str:
    """JSON, gzip-compressed (deterministic: no timestamp), base64: inert inside a <script> element and about
    ten times smaller than the JSON. The page decodes it with DecompressionStream
    (``templates/_unpack.js``)."""
    text = json.dumps(obj, separators=(",", ":"), sort_keys=True).encode("utf-8")
    return base64.b64encode(gzip.compress(text, compresslevel=6, mtime=0)).decode("ascii")


def unpack(data: str) -> JSONValue:
    """The inverse of :func:`pack` (for tests and tools reading a rendered report)."""
    return json.loads(gzip.decompress(base64.b64decode(data)))


def write_page(out: Path, html: str) -> Path:
    """Write a page as UTF-8, a lone surrogate (a case id a results file spells ``\\ud800``, say) as U+FFFD,
    as a browser shows it, rather than failing to encode it."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html.encode("utf-16", "surrogatepass").decode("utf-16", "replace"), encoding="utf-8")
    return out
