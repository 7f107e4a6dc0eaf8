"""AMD Quark's custom operators (domain com.amd.quark) inside ONNX Runtime.

The ``amd-quark`` package ships the operators' C++ sources (``quark/onnx/operators/custom_ops``) with ONNX
Runtime's C/C++ API headers (1.17, whose C API later ONNX Runtime releases keep serving), but no built
library; its own build path needs torch. :func:`build` compiles the CPU library with the system C++ compiler,
explicitly and once (``qdq-conformance build-quark``), into a cache folder keyed by the sources; it never
installs amd-quark (the sources are read from an installed copy or from the wheel, downloaded with ``pip
download --no-deps``), so the installed onnx and onnxruntime are never changed. The ``quark`` backend loads
the library with ``SessionOptions.register_custom_ops_library``; without it, the backend cannot be created (a
usage error of the run, saying how to build the library).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx

from ..cachedir import cache_root
from ..opspecs import QUARK
from .backend_options import check_ort
from .base import BackendUnavailable, NotApplicable
from .builtin import OrtBackend

#: The amd-quark release whose sources `build` fetches when none is installed (override: --quark-version).
DEFAULT_QUARK_VERSION = "0.13"
SOURCES = ["custom_op_library.cc", "custom_op_qdq.cc", "custom_op_in.cc", "custom_op_bfp.cc",
           "custom_op_mx.cc", "custom_op_lstm.cc", "bfp/cpu/bfp.cc", "mx/cpu/mx.cc", "bfp/cpu/bfp_kernel.cc",
           "mx/cpu/mx_kernel.cc"]
INCLUDES = ["include", "src", "include/onnxruntime-1.17.0/onnxruntime",
            "include/onnxruntime-1.17.0/onnxruntime/core/session", "include/gsl-4.0.0"]
LIBRARY = "libcustom_ops.so"


class BuildError(Exception):
    """The library could not be built; the message says why and what to do."""


def cache_dir() -> Path:
    return cache_root() / "quark"


def installed_sources() -> Path | None:
    """``quark/onnx/operators/custom_ops`` of an installed amd-quark, found without importing it (its import
    pulls in torch)."""
    spec = importlib.util.find_spec("quark")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        path = Path(root) / "onnx" / "operators" / "custom_ops"
        if (path / "src" / "custom_op_qdq.cc").exists():
            return path
    return None


def _from_wheel(wheel: Path, dest: Path) -> Path:
    prefix = "quark/onnx/operators/custom_ops/"
    try:
        with zipfile.ZipFile(wheel) as z:
            members = [m for m in z.namelist() if m.startswith(prefix)]
            if not members:
                raise BuildError(f"{wheel}: holds no {prefix} (not an amd-quark wheel?)")
            z.extractall(dest, members)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as e:
        raise BuildError(f"{wheel}: not a wheel (a zip archive): {e}") from None
    except FileNotFoundError:
        raise BuildError(f"{wheel}: no such file") from None
    return dest / prefix


def fetch_sources(version: str, dest: Path) -> Path:
    """Download the amd-quark wheel (no dependencies, not installed) and unpack only its custom-op sources."""
    wheels = dest / "wheel"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(wheels),
           f"amd-quark=={version}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    found = sorted(wheels.glob("amd_quark-*.whl"))
    if r.returncode or not found:
        raise BuildError(f"could not download amd-quark {version} ({' '.join(cmd)}): "
                         f"{(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    return _from_wheel(found[0], dest / "src")


def _digest(src: Path, compiler: str, flags: list[str]) -> str:
    """Key of a build: compiler, flags and the bytes of every source file."""
    h = hashlib.sha256(" ".join([compiler, *flags]).encode())
    for p in sorted((src / "src").rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(src)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def build(source: Path | None = None, version: str = DEFAULT_QUARK_VERSION, force: bool = False,
          log=print) -> Path:  # noqa: ANN001 - a print-like callable
    """Compile (or find in the cache) the CPU custom-op library; return its path. Whatever stops it (a source
    that is not one, a compiler that fails or is missing, a cache that cannot be written) is a BuildError
    whose message is one line."""
    if source is not None and not source.exists():
        raise BuildError(f"{source}: no such file or folder (--source takes amd-quark's custom_ops folder or "
                         "a wheel)")
    if source is not None and not source.is_dir() and source.suffix != ".whl":
        raise BuildError(f"{source}: neither a folder nor a .whl (--source takes amd-quark's custom_ops "
                         "folder or a wheel)")
    try:
        return _build(source, version, force, log)
    except OSError as e:
        raise BuildError(f"{e.filename or 'the build'}: {e.strerror or e}") from None


def _build(source: Path | None, version: str, force: bool, log) -> Path:  # noqa: ANN001 - a print-like callable
    compiler = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    if not compiler:
        raise BuildError("no C++ compiler found (install g++, e.g. apt-get install g++, or set CXX)")
    flags = ["-O2", "-std=c++17", "-shared", "-fPIC", "-DNO_GPU", "-w"]
    with tempfile.TemporaryDirectory(prefix="qdq-quark-") as tmp:
        if source is not None and source.suffix == ".whl":
            src = _from_wheel(source, Path(tmp))
        elif source is not None:
            src = source
        else:
            src = installed_sources() or fetch_sources(version, Path(tmp))
        missing = [s for s in SOURCES if not (src / "src" / s).exists()]
        if missing:
            raise BuildError(f"{src} lacks {', '.join(missing)} (a different amd-quark layout?)")
        out_dir = cache_dir() / _digest(src, compiler, flags)
        lib = out_dir / LIBRARY
        if lib.exists() and not force:
            log(f"cached: {lib}")
            return lib
        out_dir.mkdir(parents=True, exist_ok=True)
        cmd = [compiler, *flags, *(f"-I{src / i}" for i in INCLUDES),
               *(str(src / "src" / s) for s in SOURCES), "-o", str(out_dir / (LIBRARY + ".tmp"))]
        log(f"compiling {len(SOURCES)} sources from {src} with {compiler} (about 15 s)")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            said = [ln.strip() for ln in r.stderr.splitlines() if ln.strip()]
            first = next((ln for ln in said if "error" in ln.lower()), said[0] if said else "")
            raise BuildError(f"{compiler} failed (exit status {r.returncode})"
                             + (f": {first[:500]}" if first else ""))
        (out_dir / (LIBRARY + ".tmp")).replace(lib)
        (out_dir / "BUILD").write_text(" ".join(cmd) + "\n")
    (cache_dir() / "latest").write_text(str(lib) + "\n")
    log(f"built: {lib}")
    return lib


def find_library() -> Path | None:
    """The library to load: $QDQ_QUARK_LIBRARY, else the last one `build` produced."""
    env = os.environ.get("QDQ_QUARK_LIBRARY")
    if env:
        return Path(env) if Path(env).exists() else None
    latest = cache_dir() / "latest"
    if latest.exists():
        lib = Path(latest.read_text().strip())
        return lib if lib.exists() else None
    return None


class QuarkBackend:
    """ONNX Runtime (CPU) with AMD Quark's custom-op library registered; runs com.amd.quark cases only."""

    name = "quark"

    def __init__(self, library: Path | None = None, options: dict[str, str] | None = None) -> None:
        import onnxruntime as ort  # here, not at the top: only this backend's worker pays its import

        self.library = library or find_library()
        if self.library is None:
            raise BackendUnavailable("AMD Quark's custom-op library is not built: run `qdq-conformance "
                                     "build-quark` once (needs a C++ compiler; see README, section 'AMD "
                                     "Quark')")
        self.version = f"{DEFAULT_QUARK_VERSION}+ort{ort.__version__}"
        src = self.library.parent / "BUILD"
        self.build_command = src.read_text().strip() if src.exists() else ""
        self._backend: OrtBackend | None = None
        self.options = check_ort(options or {})  # (ONNX Runtime's session options, as for ort)

    def _ort(self) -> OrtBackend:
        """The ort backend with the library registered: the quark backend's run path and its repro's."""
        if self._backend is None:
            self._backend = OrtBackend(custom_ops_libraries=[str(self.library)], options=self.options)
        return self._backend

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        domains = {n.domain for n in model.graph.node}
        if QUARK not in domains or not domains <= {QUARK, "", "ai.onnx"}:
            raise NotApplicable("the quark backend runs com.amd.quark operators (with ai.onnx ops around "
                                "them in a graph case) only (ai.onnx cases: use --backend ort)")
        return self._ort().run(model, feeds)

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return self._ort().repro(model_code, output_names)  # (the library qdq-conformance build-quark built)
