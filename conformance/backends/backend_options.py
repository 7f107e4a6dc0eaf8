"""``--backend-option KEY=VALUE``: settings handed to the backend as it is created, checked by the backend
that takes them (an unknown key is a usage error of the run, in one line), recorded in the results header and
applied by every repro script.

- ``ort`` (and ``quark``, which runs ONNX Runtime): a ``SessionOptions`` attribute (``enable_mem_reuse=0``,
  ``execution_mode=ORT_PARALLEL``) or a session config entry (``session.disable_quant_qdq=1``,
  ``optimization.disable_specified_optimizers=...``). ONNX Runtime ignores a config key it does not know, so
  the key is looked up in the installed ONNX Runtime's own library, where every key it reads is spelled out:
  a key it does not hold is refused. ``graph_optimization_level`` is ``--ort-optimization``'s.
- ``openvino``: a property the device's plugin lists as writable (``SUPPORTED_PROPERTIES``), passed to
  ``compile_model`` (a value OpenVINO refuses is refused when the backend is created, with its words).
- every other built-in backend takes none; a third-party factory receives them as ``backend_option``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

#: the keyword a backend factory receives the options under
KEYWORD = "backend_option"
#: SessionOptions attributes that have an option of their own
OWN_FLAGS = {"graph_optimization_level": "--ort-optimization"}


def parse(values: Sequence[str] | None) -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict (the last of a repeated key wins); ValueError naming the first one that
    is not ``KEY=VALUE``."""
    out: dict[str, str] = {}
    for text in values or ():
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--backend-option {text!r}: expected KEY=VALUE, e.g. "
                             "session.disable_quant_qdq=1")
        out[key.strip()] = value
    return out


def of(options: Mapping[str, object]) -> dict[str, str]:
    """The backend options in a backend's option mapping (the registry's ``BackendOptions``)."""
    given = options.get(KEYWORD)
    return {str(k): str(v) for k, v in given.items()} if isinstance(given, Mapping) else {}


def refuse_any(backend: str, given: Mapping[str, str]) -> None:
    """A backend that takes no option: ValueError when some are given."""
    if given:
        raise ValueError(f"--backend-option {next(iter(given))}: the {backend} backend takes no backend "
                         "options (ort: session options and config entries; openvino: compile properties)")


def _close(key: str, known: Sequence[str]) -> str:
    near = difflib.get_close_matches(key, known, n=3, cutoff=0.75)
    return f"; did you mean {', '.join(near)}?" if near else ""


@cache
def _ort_library() -> bytes | None:
    """The bytes of ONNX Runtime's Python extension (where the config keys it reads are spelled out), or None
    when it cannot be read."""
    from onnxruntime.capi import onnxruntime_pybind11_state  # (this backend's import: see check_ort)

    try:
        return Path(str(onnxruntime_pybind11_state.__file__)).read_bytes()
    except (OSError, TypeError):
        return None


def check_ort(given: Mapping[str, str]) -> dict[str, str]:
    """``given`` when every key is a SessionOptions attribute or a session config entry the installed ONNX
    Runtime knows; ValueError naming the first that is not (called in the backend's worker, which imports
    onnxruntime anyway)."""
    import onnxruntime as ort  # (ort's and quark's workers only: see above)

    so = ort.SessionOptions
    attributes = sorted(k for k in dir(so) if isinstance(getattr(so, k), property))
    library = _ort_library() if any(k not in attributes for k in given) else None
    for key in given:
        if key in OWN_FLAGS:
            raise ValueError(f"--backend-option {key}: set it with {OWN_FLAGS[key]}")
        if key in attributes:
            continue
        if "." in key and library is not None and b"\0" + key.encode() + b"\0" in library:
            continue
        if "." in key and library is None:
            continue  # (the library cannot be read: ONNX Runtime takes the key as it is)
        keys = re.findall(rb"\0((?:session|optimization|mlas|ep)\.[a-z0-9_.]+)\0", library or b"")
        known = attributes + sorted({k.decode() for k in keys})
        raise ValueError(f"--backend-option {key}: ONNX Runtime {ort.__version__} has no session config "
                         f"entry nor SessionOptions attribute of that name{_close(key, known)} (config "
                         "entries: onnxruntime_session_options_config_keys.h, e.g. "
                         "session.disable_quant_qdq)")
    return dict(given)


def check_openvino(core: object, device: str, given: Mapping[str, str]) -> dict[str, str]:
    """``given`` when every key is a property ``device``'s plugin lists as writable; ValueError naming the
    first that is not."""
    supported = core.get_property(device, "SUPPORTED_PROPERTIES")  # type: ignore[attr-defined]
    writable = sorted(k for k, mode in dict(supported).items() if str(mode) == "RW")
    for key in given:
        if key not in writable:
            raise ValueError(f"--backend-option {key}: not a property OpenVINO's {device} plugin can be "
                             f"compiled with{_close(key, writable)} (writable: {', '.join(writable)})")
    return dict(given)
