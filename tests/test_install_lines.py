"""Every install line the tool prints works where it is printed (issue 38): the package is not on PyPI, so
``pip install 'onnx-qdq-conformance[X]'`` never does. From a checkout the line is the checkout's ``-e``; from
a wheel, the wheel; from anywhere else, the extra's own requirements; an exported suite's README names the
wheel and the checkout. ``.ci/wheel-check`` runs the lines a wheel install and a checkout print, each in a new
virtualenv; these tests hold the lines' form.
"""

from __future__ import annotations

import json
import re
import sys

import pytest

from qdq_conformance import __version__, install
from qdq_conformance.backends.base import BackendUnavailable
from qdq_conformance.backends.registry import create
from qdq_conformance.generators.suite_readme import readme


class _Dist:
    def __init__(self, direct_url: dict | None, requires: list[str] | None = None) -> None:
        self.direct_url = direct_url
        self.requires = requires or []

    def read_text(self, name: str) -> str | None:
        return json.dumps(self.direct_url) if name == "direct_url.json" and self.direct_url else None


def _installed(monkeypatch, direct_url: dict | None, requires: list[str] | None = None) -> None:
    dist = _Dist(direct_url, requires)
    monkeypatch.setattr(install.metadata, "distributions", lambda **kw: [dist])
    monkeypatch.setattr(install.metadata, "distribution", lambda name: dist)


def test_a_checkout_prints_its_own_editable_line(monkeypatch, tmp_path):
    _installed(monkeypatch, {"url": tmp_path.as_uri(), "dir_info": {"editable": True}})
    assert install.install_hint("openvino") == f"python -m pip install -e '{tmp_path}[openvino]'"


def test_a_wheel_install_prints_the_wheel(monkeypatch, tmp_path):
    wheel = tmp_path / f"onnx_qdq_conformance-{__version__}-py3-none-any.whl"
    wheel.write_bytes(b"")
    _installed(monkeypatch, {"url": wheel.as_uri(), "archive_info": {}})
    assert install.install_hint("tract") == f"python -m pip install '{wheel}[tract]'"


def test_anything_else_prints_the_extra_s_requirements(monkeypatch, tmp_path):
    gone = tmp_path / "gone.whl"  # (a wheel deleted since, or an index: no local file to point at)
    _installed(monkeypatch, {"url": gone.as_uri(), "archive_info": {}},
               ['iree-base-compiler<3.14,>=3.13; extra == "iree"', 'tract<0.24,>=0.23; extra == "tract"',
                "numpy>=1.26"])
    assert install.install_hint("iree") == "python -m pip install 'iree-base-compiler<3.14,>=3.13'"
    assert install.install_hint("tract") == "python -m pip install 'tract<0.24,>=0.23'"


def test_this_install_s_line_names_the_extra_as_pip_can_install_it():
    line = install.install_hint("tract")
    assert "onnx-qdq-conformance[" not in line, line  # (not on PyPI: that line never works)
    assert re.fullmatch(r"python -m pip install (-e )?'[^']+\[tract\]'|python -m pip install 'tract[^']*'",
                        line)


@pytest.mark.parametrize(("name", "modules"), [
    ("openvino", ("openvino",)), ("tract", ("tract",)), ("tinygrad", ("tinygrad", "tinygrad.nn.onnx")),
    ("iree", ("iree.compiler", "iree.runtime")), ("tvm", ("tvm",))])
def test_a_backend_not_installed_prints_the_line_that_installs_it(monkeypatch, name, modules):
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(BackendUnavailable) as e:
        create(name)
    assert str(e.value).endswith(install.install_hint(name)), str(e.value)
    assert "'onnx-qdq-conformance[" not in str(e.value)


def test_the_suite_readme_names_the_wheel_and_the_checkout():
    text = readme({"suite_version": __version__, "onnx_version": "1.23.2",
                   "forms": ["runtime", "initializer"], "cases": [], "kinds": {},
                   "selection": {"complete": True}})
    block = text.split("## Run it with qdq-conformance", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    lines = block.strip().splitlines()
    assert lines[0] == (f'python -m pip install "onnx_qdq_conformance-{__version__}-py3-none-any.whl" '
                        '"onnx==1.23.2"')
    assert lines[1] == 'python -m pip install -e PATH/TO/THE/CHECKOUT "onnx==1.23.2"'
    assert "onnx-qdq-conformance==" not in text



def test_matrix_without_uv_prints_the_line_that_installs_it(monkeypatch):
    from qdq_conformance.matrix import environments
    from qdq_conformance.matrix.releases import ReleaseError

    monkeypatch.setitem(sys.modules, "uv", None)
    monkeypatch.setattr(environments.shutil, "which", lambda name: None)
    with pytest.raises(ReleaseError) as e:
        environments.uv_binary()
    assert install.install_hint("matrix") in str(e.value), str(e.value)
    assert "'onnx-qdq-conformance[" not in str(e.value)
