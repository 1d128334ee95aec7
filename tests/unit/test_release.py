"""The release: its workflow builds and checks both distributions, and what it builds is what the
workflow publishes (a dry run of its build step: `python -m build`, then `twine check`)."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from pytest_ragretrieval import __version__

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / ".github" / "workflows" / "release.yml"


def workflow() -> dict[str, object]:
    loaded: dict[object, object] = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))
    loaded["on"] = loaded.pop(True)  # YAML 1.1 reads the bare key `on` as True
    return {str(key): value for key, value in loaded.items()}


def test_it_runs_on_a_version_tag_publishes_by_trusted_publishing_and_moves_the_major_tag() -> None:
    found = workflow()
    assert found["on"] == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}
    jobs = found["jobs"]
    assert isinstance(jobs, dict)
    build = "\n".join(step.get("run", "") for step in jobs["build"]["steps"])
    assert "python -m build" in build and "twine check --strict dist/*" in build
    publish = jobs["publish"]
    assert publish["permissions"] == {"id-token": "write"} and publish["environment"]["name"] == "pypi"
    assert any(step.get("uses") == "pypa/gh-action-pypi-publish@release/v1" for step in publish["steps"])
    assert not any("password" in step.get("with", {}) for step in publish["steps"])  # no stored token
    assert jobs["tests"] == {"uses": "./.github/workflows/tests.yml"} and jobs["build"]["needs"] == "tests"
    move = jobs["major-tag"]
    assert move["needs"] == "publish" and move["permissions"] == {"contents": "write"}
    script = "\n".join(step.get("run", "") for step in move["steps"])
    assert 'major="${TAG%%.*}"' in script and 'git push --force origin "refs/tags/$major"' in script


def test_the_major_tag_of_a_release_tag() -> None:
    """The shell expansion the workflow moves the tag with: v1.4.2 moves v1."""
    done = subprocess.run(["bash", "-c", 'TAG=v1.4.2; echo "${TAG%%.*}"'], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "v1"


def test_the_tagged_commits_tests_gate_every_job() -> None:
    """577255f published a tag whatever its commit's tests said: every job needs, through its chain of
    `needs`, the `tests` job, which calls the tests workflow (callable: `workflow_call`)."""
    jobs = workflow()["jobs"]
    assert isinstance(jobs, dict)
    for name in jobs:
        chain = name
        while chain != "tests":
            assert "needs" in jobs[chain], f"job {name!r} does not wait for the tests"
            chain = jobs[chain]["needs"]
    called: dict[object, object] = yaml.safe_load((RELEASE.parent / "tests.yml").read_text(encoding="utf-8"))
    assert "workflow_call" in called[True]  # type: ignore[operator]


def test_the_ci_page_pins_the_major_tag_a_release_of_this_version_moves() -> None:
    """docs/ci.md pinned `@v1`, which a 0.x release never creates (its text said `@v0.1.0`): the pin is
    what the release workflow's own expansion gives for the tag of this version, and the text names it."""
    move = "\n".join(step.get("run", "") for step in workflow()["jobs"]["major-tag"]["steps"])  # type: ignore[index]
    expansion = next(line.strip() for line in move.splitlines() if line.strip().startswith("major="))
    done = subprocess.run(["bash", "-c", f'TAG=v{__version__}; {expansion}; echo "$major"'],
                          capture_output=True, text=True, check=True)
    major = done.stdout.strip()
    page = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    pins = set(re.findall(r"uses: your-org/pytest-ragretrieval@(v[\w.]+)", page))
    assert pins == {major}, pins
    assert f"`@{major}` follows the newest" in page and f"moves `{major}`" in page


@pytest.mark.slow
def test_the_build_step_builds_and_checks_both_distributions(tmp_path: Path) -> None:
    """The workflow's build step on a copy of the working tree: an sdist and a wheel of this version,
    which `twine check --strict` accepts (the README renders on PyPI), the wheel holding the package."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, check=True, timeout=60).stdout.decode().split("\0")
    tree = tmp_path / "tree"
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
    # --no-isolation: the build backend of this environment, so the test needs no package index.
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path / "dist"), str(tree)],
                   capture_output=True, check=True, timeout=600)
    dists = sorted(path.name for path in (tmp_path / "dist").iterdir())
    assert dists == [f"pytest_ragretrieval-{__version__}-py3-none-any.whl", f"pytest_ragretrieval-{__version__}.tar.gz"]
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, (tmp_path / "dist").iterdir())],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout
    with zipfile.ZipFile(tmp_path / "dist" / dists[0]) as wheel:
        names = wheel.namelist()
    assert "pytest_ragretrieval/plugin.py" in names and not any(name.startswith("tests/") for name in names)
    with tarfile.open(tmp_path / "dist" / dists[1]) as sdist:
        assert f"pytest_ragretrieval-{__version__}/pyproject.toml" in sdist.getnames()
