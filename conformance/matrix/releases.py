"""Which releases a matrix runs: a backend's package on the index, what else each release needs, and the
``--versions`` argument (a list of releases, or a PEP 440 range of them).

A range is expanded against the releases the package index offers for this Python and platform (``pip index
versions``, pip's own look-up, with pip's configuration), to the newest patch of each minor release in it:
``>=1.24`` on ONNX Runtime is 1.24.4, 1.25.1, 1.26.0, ... 1.32.0. Pre-releases are left out unless the range
names one.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version


class ReleaseError(Exception):
    """A ``--versions`` that names no release, a backend without a package, an index that cannot be read."""


def _ort_needs(version: Version) -> tuple[str, ...]:
    # ONNX Runtime's wheels before 1.19 are built against numpy 1 (importing them under numpy 2 fails), and
    # ml_dtypes 0.6 needs numpy 2
    return ("numpy<2", "ml_dtypes<0.6") if version < Version("1.19") else ()


def _nothing(version: Version) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class Distribution:
    """A backend as a package on the index: its name, and what a release needs beside it (requirements that
    replace the constraints file's pins of the same packages)."""

    backend: str
    package: str
    needs: Callable[[Version], tuple[str, ...]] = _nothing
    #: the tool's optional dependency group that names the package (None: a core dependency)
    extra: str | None = None

    def requirements(self, version: str) -> tuple[str, ...]:
        """``onnxruntime==1.16.3``, and what that release needs beside it."""
        return (f"{self.package}=={version}", *self.needs(Version(version)))


#: The backends a matrix can run, by name.
DISTRIBUTIONS: dict[str, Distribution] = {
    "ort": Distribution("ort", "onnxruntime", _ort_needs),
    "openvino": Distribution("openvino", "openvino", extra="openvino"),
}


def distribution(backend: str) -> Distribution:
    try:
        return DISTRIBUTIONS[backend]
    except KeyError:
        raise ReleaseError(f"--backend {backend}: matrix runs the releases of "
                           f"{', '.join(sorted(DISTRIBUTIONS))} (a backend published as a package)") from None


def index_versions(package: str) -> list[str]:
    """The releases of ``package`` pip can install here (``pip index versions``), newest first."""
    cmd = [sys.executable, "-m", "pip", "index", "versions", package]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ReleaseError(f"cannot list the releases of {package} ({' '.join(cmd[2:])}): {e}") from None
    m = re.search(r"^Available versions:\s*(.+)$", r.stdout, re.MULTILINE)
    if r.returncode or m is None:
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise ReleaseError(f"cannot list the releases of {package} ({' '.join(cmd[2:])}): {last}")
    return [v.strip() for v in m.group(1).split(",") if v.strip()]


def _is_range(text: str) -> bool:
    return bool(re.match(r"\s*(?:[<>=!~]|$)", text))


def newest_of_each_minor(versions: list[str]) -> list[str]:
    """The newest patch release of each minor release, oldest first."""
    best: dict[tuple[int, ...], Version] = {}
    for v in versions:
        parsed = Version(v)
        minor = parsed.release[:2]
        if minor not in best or parsed > best[minor]:
            best[minor] = parsed
    return [str(best[k]) for k in sorted(best)]


#: the words ``--versions`` takes besides releases: the floor (the newest patch of the oldest minor release
#: this tool's own requirement on the package allows: ``onnxruntime>=1.20`` gives 1.20.1) and the newest
#: release the index offers
FLOOR, NEWEST = "floor", "newest"


def _words(items: list[str], offered: list[str], floor: str | None) -> list[str]:
    """``floor`` and ``newest`` among ``items`` as releases."""
    finals = [v for v in offered if _parses(v) and not Version(v).is_prerelease]
    out = []
    for item in items:
        if item == NEWEST:
            if not finals:
                raise ReleaseError("--versions newest: the package index offers no release")
            out.append(max(finals, key=Version))
        elif item == FLOOR:
            allowed = [v for v in finals if SpecifierSet(floor or "").contains(Version(v))]
            if not allowed:
                raise ReleaseError(f"--versions floor: no release offered satisfies this tool's requirement "
                                   f"({floor or 'none'})")
            oldest = min(allowed, key=Version)
            same_minor = [v for v in allowed if Version(v).release[:2] == Version(oldest).release[:2]]
            out.append(max(same_minor, key=Version))
        else:
            out.append(item)
    return out


def expand(spec: str, available: Callable[[], list[str]], floor: str | None = None) -> list[str]:
    """The releases ``--versions`` names, oldest first: ``1.20.1,1.24.4`` as given (each offered by the
    index; ``floor`` and ``newest`` as :data:`FLOOR` says, ``floor`` the specifier of this tool's requirement
    on the package), or a range (``>=1.24``, ``>=1.20,<1.30``) as the newest patch of each minor release in
    it. ``available`` lists what the index offers (asked once, only when needed)."""
    items = [s.strip() for s in spec.split(",") if s.strip()]
    if not items:
        raise ReleaseError("--versions: name releases (1.20.1,1.24.4) or a range ('>=1.24')")
    if any(_is_range(s) for s in items):
        try:
            wanted = SpecifierSet(",".join(items))
        except InvalidSpecifier:
            raise ReleaseError(f"--versions {spec!r}: not a list of releases nor a PEP 440 range "
                               "(e.g. '>=1.24,<1.30')") from None
        offered = available()
        pre = bool(wanted.prereleases)  # (a range that names a pre-release takes them)
        inside = [v for v in offered if _parses(v) and wanted.contains(Version(v), prereleases=pre)]
        if not inside:
            raise ReleaseError(f"--versions {spec!r}: no release in that range (offered: "
                               f"{', '.join(offered[:12]) or 'none'}{' ...' if len(offered) > 12 else ''})")
        return newest_of_each_minor(inside)
    bad = [s for s in items if not _parses(s) and s not in (FLOOR, NEWEST)]
    if bad:
        raise ReleaseError(f"--versions: {', '.join(bad)} is not a release (e.g. 1.20.1, floor, newest)")
    offered = available()
    items = _words(items, offered, floor)
    missing = [s for s in items if s not in offered]
    if missing:
        raise ReleaseError(f"--versions: {', '.join(missing)} not offered by the package index (offered: "
                           f"{', '.join(offered[:12])}{' ...' if len(offered) > 12 else ''})")
    return sorted(dict.fromkeys(items), key=Version)


def _parses(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True
