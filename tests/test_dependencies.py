"""The dependencies (docs/architecture.md, "Dependencies"): ``setup.py`` pins TensorFlow,
Keras, the serving API and TensorBoard to one minor series each, and the environment the
suite runs in satisfies every requirement, and every extra it has installed: the versions
the suite tests are the ones ``setup.py`` names."""

import ast
import importlib.metadata
import pathlib

from packaging.requirements import Requirement

REPO = pathlib.Path(__file__).resolve().parents[1]

#: The packages pinned to one minor series (``==X.Y.*``): the stack verified together.
SERIES_PINNED = {"tensorflow", "keras", "tensorflow-serving-api", "tensorboard"}


def setup_requirements(text):
    """``(install_requires, extras_require)`` of a ``setup.py`` source, as Requirements."""
    call = next(node for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "setup")
    found = {k.arg: ast.literal_eval(k.value) for k in call.keywords
             if k.arg in ("install_requires", "extras_require")}
    return ([Requirement(r) for r in found["install_requires"]],
            {name: [Requirement(r) for r in rs] for name, rs in found["extras_require"].items()})


def unmet(requirements):
    """``["<requirement>: <installed version or 'missing'>"]`` for those not satisfied."""
    out = []
    for requirement in requirements:
        try:
            version = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{requirement}: missing")
            continue
        if not requirement.specifier.contains(version, prereleases=True):
            out.append(f"{requirement}: {version}")
    return out


def installed(requirement):
    try:
        importlib.metadata.version(requirement.name)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def test_the_stack_is_pinned_to_one_minor_series_each():
    requires, _ = setup_requirements((REPO / "setup.py").read_text(encoding="utf-8"))
    series = {r.name for r in requires
              if [s.operator for s in r.specifier] == ["=="] and str(r.specifier).endswith(".*")}
    assert series == SERIES_PINNED


def test_the_environment_satisfies_every_requirement_and_every_installed_extra():
    requires, extras = setup_requirements((REPO / "setup.py").read_text(encoding="utf-8"))
    assert not unmet(requires)
    for name, requirements in extras.items():
        if all(installed(r) for r in requirements):
            assert not unmet(requirements), name


def test_an_unmet_requirement_is_named_with_the_installed_version():
    requires, extras = setup_requirements(
        'setup(install_requires=["numpy<1", "numpy>=2", "no-such-package-xyz>=1"],\n'
        '      extras_require={"test": ["pytest>=8"]})\n')
    numpy = importlib.metadata.version("numpy")
    assert unmet(requires) == [f"numpy<1: {numpy}", "no-such-package-xyz>=1: missing"]
    assert [r.name for r in extras["test"]] == ["pytest"]
