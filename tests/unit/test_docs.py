"""The README and the manual (docs/): the site builds strictly, and every code snippet is checked.

TOML goes through the project's config loader, JSON and JSON Lines through json (the data
formats' examples through the eval set's readers), YAML through yaml, Python is compiled and
bash is parsed with `bash -n`; `text` blocks are printed output and are checked where their
tests say so (tests/e2e/test_readme.py for the sample's tables). The `mine` example runs on the
sample in tests/e2e/test_docs_examples.py; the workflow snippets go through actionlint in
test_workflows.py and through the action's inputs in test_action.py.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_ragretrieval import __version__
from pytest_ragretrieval.config.settings import load_config
from pytest_ragretrieval.evalset.chunkers import Chunker, chunk_documents
from pytest_ragretrieval.evalset.documents import Document
from pytest_ragretrieval.evalset.jsonl import load_chunks, load_evalset
from pytest_ragretrieval.evalset.records import Chunk, Question, Span
from pytest_ragretrieval.scoring.evaluate import chunk_spans, score
from pytest_ragretrieval.scoring.metrics import MetricSpec

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = (ROOT / "README.md", *sorted(DOCS.glob("*.md")))
CHECKED = {"bash", "toml", "python", "json", "yaml", "text"}
FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```$", re.S | re.M)


@dataclass(frozen=True)
class Snippet:
    path: Path
    line: int
    lang: str
    text: str

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def snippets(path: Path) -> list[Snippet]:
    text = path.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        indent = len(match.group(1))
        body = "".join(line[indent:] for line in match.group(3).splitlines(keepends=True))
        found.append(Snippet(path, text.count("\n", 0, match.start()) + 1, match.group(2), body))
    return found


ALL = [snippet for page in PAGES for snippet in snippets(page)]


def of(lang: str) -> list[Snippet]:
    return [snippet for snippet in ALL if snippet.lang == lang]


def test_every_snippet_names_a_checked_language() -> None:
    assert len(ALL) > 40
    unchecked = [f"{s} ```{s.lang}" for s in ALL if s.lang not in CHECKED]
    assert not unchecked, "a snippet in a language no test checks:\n" + "\n".join(unchecked)


def test_the_readme_is_a_front_door_that_links_every_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 400
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    listed = set(re.findall(r"[\w-]+\.md", json.dumps(nav)))
    assert listed == {page.name for page in DOCS.glob("*.md")}
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)", readme))
    assert linked == listed - {"index.md"}


def test_the_readmes_links_lead_somewhere() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme):
        if not target.startswith("http"):
            assert (ROOT / target).is_file(), target


def test_the_manual_builds_strictly(tmp_path: Path) -> None:
    """mkdocs.yml sets strict and warns on unknown links, anchors and pages missing from nav."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=180, env={"NO_MKDOCS_2_WARNING": "1", "PATH": ""},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (tmp_path / "site" / "ci" / "index.html").is_file()
    assert (tmp_path / "site" / "pr-comment.png").is_file()


@pytest.mark.parametrize("snippet", of("bash"), ids=str)
def test_bash_snippets_parse(snippet: Snippet) -> None:
    done = subprocess.run(["bash", "-n"], input=snippet.text, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, f"{snippet}: {done.stderr}"


@pytest.mark.parametrize("snippet", of("python"), ids=str)
def test_python_snippets_compile(snippet: Snippet) -> None:
    compile(snippet.text, str(snippet), "exec")


@pytest.mark.parametrize("snippet", of("yaml"), ids=str)
def test_yaml_snippets_parse(snippet: Snippet) -> None:
    assert yaml.safe_load(snippet.text) is not None, snippet


@pytest.mark.parametrize("snippet", of("json"), ids=str)
def test_json_snippets_load_whole_or_line_by_line(snippet: Snippet) -> None:
    try:
        json.loads(snippet.text)
    except json.JSONDecodeError:
        for line in snippet.text.splitlines():
            json.loads(line)


def sample_table() -> dict[str, Any]:
    table: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ragretrieval"]
    return table


def merged(base: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in more.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def toml_text(table: dict[str, Any], prefix: str = "tool.ragretrieval") -> str:
    """A table back as TOML: scalars and arrays as JSON writes them, which TOML reads alike."""
    plain = {k: v for k, v in table.items() if not isinstance(v, dict) or k == "tolerance"}
    lines = [f"[{prefix}]"]
    for key, value in plain.items():
        if isinstance(value, dict):
            value = "{" + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items()) + "}"
            lines.append(f"{key} = {value}")
        else:
            lines.append(f"{key} = {json.dumps(value, ensure_ascii=False)}")
    for key, value in table.items():
        if isinstance(value, dict) and key != "tolerance":
            lines.append(toml_text(value, f"{prefix}.{key}"))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("snippet", of("toml"), ids=str)
def test_toml_snippets_load_through_the_config_loader(snippet: Snippet, tmp_path: Path) -> None:
    """A whole table is loaded as written; a retriever table is loaded inside the sample's."""
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures")
    data = tomllib.loads(snippet.text)["tool"]["ragretrieval"]
    if "chunks" in data:
        (tmp_path / "pyproject.toml").write_text(snippet.text, encoding="utf-8")
    else:
        base = {key: value for key, value in sample_table().items() if key != "chunks" or "documents" not in data}
        (tmp_path / "pyproject.toml").write_text(toml_text(merged(base, data)), encoding="utf-8")
    config = load_config(None, tmp_path)
    names = {spec.name for spec in config.retrievers}
    assert set(data.get("retrievers", {})) <= names


def test_the_sample_config_shown_is_pyprojects() -> None:
    (shown,) = [s for s in of("toml") if s.path.name == "sample.md"]
    assert tomllib.loads(shown.text)["tool"]["ragretrieval"] == sample_table()


def test_the_data_examples_load_with_the_eval_set_readers(tmp_path: Path) -> None:
    """Each chunk example is a valid chunk; each eval-set example loads against the sample's chunks, or,
    with `relevant_spans`, against a document holding each span's text where the example says."""
    chunks = load_chunks(ROOT / "fixtures" / "chunks.jsonl")
    lines = [line for s in of("json") for line in s.text.splitlines() if line.startswith('{"id"')]
    spans = [line for line in lines if '"relevant_spans"' in line]
    questions = [line for line in lines if '"query"' in line and line not in spans]
    examples = [line for line in lines if '"text"' in line and line not in spans]
    assert spans
    for line in spans:
        (span,) = json.loads(line)["relevant_spans"]
        document = Document(span["doc"], "。" * span["start"] + span["text"])
        (tmp_path / "evalset.jsonl").write_text(line + "\n", encoding="utf-8")
        (question,) = load_evalset(tmp_path / "evalset.jsonl", chunk_documents(
            [document], Chunker("sentences", size=1), tmp_path), documents=[document])
        assert question.relevance == {f"{span['doc']}#1": span["grade"]}  # the padding is sentence #0
    assert questions and examples
    for example in examples:
        (tmp_path / "chunks.jsonl").write_text(example + "\n", encoding="utf-8")
        assert load_chunks(tmp_path / "chunks.jsonl")
    (tmp_path / "evalset.jsonl").write_text("\n".join(dict.fromkeys(questions)) + "\n", encoding="utf-8")
    assert len(load_evalset(tmp_path / "evalset.jsonl", chunks)) == len(dict.fromkeys(questions))


def test_the_mine_example_is_one_text() -> None:
    """The README and the retrievers page show the same factory, which the e2e test runs."""
    factories = {s.text for s in of("python") if "def make_retriever" in s.text}
    assert len(factories) == 1
    for table in (tomllib.loads(s.text) for s in of("toml")):
        mine = table["tool"]["ragretrieval"].get("retrievers", {}).get("mine")
        if mine is not None:
            assert mine["sources"] == ["bm25"]


def test_the_configuration_page_lists_every_command() -> None:
    """The page showed `choose from` with 5 of the 9 commands; it must be what the command prints."""
    from pytest_ragretrieval.cli import COMMANDS

    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    (shown,) = re.findall(r"invalid choice: 'suspect'; did you mean 'suspects'\? \(choose from (.*)\)", page)
    assert shown == ", ".join(f"'{name}'" for name in COMMANDS)


INSTALL = re.compile(r"pip install ((?:-e )?\S+(?: @ \S+)?)")
EXTRAS = r"\[[a-z0-9,-]+\]"
FORMS = {
    "clone": r'-e "path/to/pytest-ragretrieval' + EXTRAS + '"',
    "commit": (r'"pytest-ragretrieval' + EXTRAS + " @ "
               + re.escape("git+https://github.com/your-org/pytest-ragretrieval@<commit>") + '"'),
    "published": r'"pytest-ragretrieval' + EXTRAS + "==" + re.escape(__version__) + '"',
}
"""The forms of an install line (docs/releasing.md): from a clone, from git at the commit you tested,
and the published one, named as what the install will read once this version is released."""
QUOTED = "which is not installed; "
"""What precedes the install a missing package's message names: the plugin's output, quoted, not an install line."""


def install_lines() -> list[tuple[str, str]]:
    """Every `pip install` of the plugin in README.md and docs/ (prose, snippets, workflows), as (page, what)."""
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = " ".join(page.read_text(encoding="utf-8").split())
        for match in INSTALL.finditer(text):
            if "pytest-ragretrieval" in match.group(1) and not text[: match.start()].endswith(QUOTED):
                found.append((page.name, match.group(1).rstrip("`),.;")))
    return found


def test_every_install_line_is_one_of_the_three_forms() -> None:
    """No release exists: 577255f installed from git at the tag `v0.1.0`, which no release has created yet;
    every line is a clone, a commit, or the published install (a tag exists only once released)."""
    found = install_lines()
    assert len(found) >= 8, found
    wrong = [f"{page}: {what}" for page, what in found if not any(re.fullmatch(form, what) for form in FORMS.values())]
    assert not wrong, wrong


def test_the_readme_leads_its_install_step_with_one_that_works_and_says_how_the_published_one_reads() -> None:
    """Until a release exists: the clone first, the git install at a commit, then the published form, said to
    be what the install will read once released; no page installs from a tag."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    step = readme.split("### 1. Install", 1)[1].split("\n### ", 1)[0]
    shown = " ".join(step.split())
    lines = [what for what in (m.group(1).rstrip("`),.;") for m in INSTALL.finditer(shown)) if "pytest-ragretrieval" in what]
    kinds = [next(kind for kind, form in FORMS.items() if re.fullmatch(form, what)) for what in lines]
    assert kinds[:3] == ["clone", "commit", "published"], lines
    block = re.search(r"```bash\n(.*?)```", step, re.S)
    assert block is not None and re.fullmatch(FORMS["clone"], block.group(1).strip().removeprefix("pip install ")), block
    published = shown.index(lines[kinds.index("published")])
    assert "will read" in shown[published - 80 : published], shown[published - 80 : published]
    assert not [what for _, what in install_lines() if re.search(r"@v\d", what)]


def test_the_owner_placeholder_is_one_name_documented_in_one_place() -> None:
    pages = [ROOT / "README.md", ROOT / "action.yml", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert text.count("your-org/") == text.count("your-org/pytest-ragretrieval"), page.name
    documented = [page.name for page in pages if "## The owner placeholder" in page.read_text(encoding="utf-8")]
    assert documented == ["releasing.md"]


def test_the_span_metrics_worked_example_is_what_the_functions_give() -> None:
    """Metrics page, "Span metrics": each cell's fraction is the package's value on the example's
    spans, scored as the gate scores a ranking (`score`: the top rows at their cutoff, the budget rows
    as `char_recall@500c` and so on over the top 4), and the figure shown is that value to 4 decimals."""
    page = (DOCS / "metrics.md").read_text(encoding="utf-8")
    example = page.split("### Worked example", 1)[1].split("\n## ", 1)[0]
    (shown,) = [s for s in snippets(DOCS / "metrics.md") if s.lang == "json" and '"ranked"' in s.text]
    data = json.loads(shown.text)
    gold = tuple(Span("doc", start, end) for start, end in data["gold"])
    chunks = [Chunk(f"c{rank}", "x" * (end - start), "doc", start=start, end=end)
              for rank, (start, end) in enumerate(data["ranked"])]
    question = Question("q", "query", {"c0": 1}, spans=gold)
    rows = re.findall(r"^\| (top \d+|`@\d+c`) \| (.+) \|$", example, re.M)
    assert [label for label, _ in rows] == ["top 3", "top 4", "`@500c`", "`@400c`", "`@399c`"]
    names = ("char_recall", "char_precision", "char_iou", "answer_hit")
    for label, cells in rows:
        top = re.fullmatch(r"top (\d+)", label)
        specs = [MetricSpec(name, int(top.group(1))) if top else MetricSpec.parse(name + label.strip("`"), len(chunks))
                 for name in names]
        scored = score("r", [question], {"q": [c.id for c in chunks]}, specs, spans=chunk_spans(chunks))
        values = [scored.questions[0].values[spec.label] for spec in specs]
        *fractions, hit = cells.split(" | ")
        for cell, value, name in zip(fractions, values[:3], names[:3], strict=True):
            found = re.fullmatch(r"`(\d+) / \(?(\d+)(?: \+ (\d+))?\)?` = ([\d.]+)", cell)
            assert found, cell
            numerator, denominator, missed, figure = found.groups()
            assert value == round(int(numerator) / (int(denominator) + int(missed or 0)), 6), (label, name)
            assert float(figure) == round(value, 4), (label, name)
        assert float(hit) == values[3], label
