"""Names that say what they hold (docs/architecture.md, "Names"): no module file name is used for two modules
of the package (``__init__.py`` aside), and a command's module is named ``<command>_cmd.py``, except the
entry point ``cli.py`` that dispatches to them."""

from __future__ import annotations

from collections import defaultdict

from .sources import modules


def test_no_module_file_name_is_used_twice() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for name, (path, is_package) in modules().items():
        if not is_package:
            by_name[path.name].append(name)
    reused = {file: sorted(names) for file, names in by_name.items() if len(names) > 1}
    assert not reused, f"file names used for more than one module: {reused}"


def test_command_modules_follow_one_convention() -> None:
    odd = [name for name, (path, _) in modules().items()
           if (path.stem.endswith("cmd") and not path.stem.endswith("_cmd"))
           or path.stem in {"commands", "cli"} and name != "qdq_conformance.cli"]
    assert not odd, f"command modules not named <command>_cmd.py: {odd}"


def test_the_self_check_backend_is_oracle_and_its_old_name_says_it_is_deprecated(capsys) -> None:
    from qdq_conformance.backends import names
    from qdq_conformance.backends.registry import create

    names._warned.clear()
    assert create("oracle").name == "oracle" and capsys.readouterr().err == ""
    assert create("reference").name == "oracle"
    err = capsys.readouterr().err
    assert "'reference' is deprecated" in err and "use 'oracle'" in err and len(err.splitlines()) == 1
