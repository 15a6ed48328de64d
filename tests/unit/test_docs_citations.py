"""No file of the repository cites a document outside it: the fact is written in the comment or in docs/.

The team's design notes, the service spec and the Fidelity reference on the upstream live outside the repository, so
a reader of the code cannot follow a citation of them. What the Fidelity adapter relies on is written out in
docs/fidelity-protocol.md; docs/architecture.md is the repository's own and may be cited.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("ftdesk", "tests", "bench", "packaging", "docs")
TEXT_SUFFIXES = frozenset({".py", ".md", ".txt", ".spec", ".sh", ".iss", ".toml", ".cfg", ".ini", ".json", ".yml"})

# Written in pieces so this file does not cite what it forbids.
_OUTSIDE = re.compile(
    "|".join(
        (
            r"\bstack" + r"-notes\.md\b",
            r"(?:\bdesign/|\.\./)" + r"architecture\.md\b",
            r"\bfidelity" + r"-upstream\.md\b",
            r"\bservice" + r"-spec\.md\b",
            r"\bupstream" + r" reference\b",
            r"\bthe reference" + r",? (?:section|§)",
        )
    ),
    re.IGNORECASE,
)


def outside_citations(text: str) -> list[tuple[int, str]]:
    """Return (line number, cited text) for each citation of a document outside the repository."""
    return [
        (number, match.group(0))
        for number, line in enumerate(text.splitlines(), start=1)
        for match in _OUTSIDE.finditer(line)
    ]


def scanned_files() -> list[Path]:
    """Return the text files of the scanned folders, bytecode caches left out."""
    return sorted(
        path
        for folder in SCANNED
        for path in (ROOT / folder).rglob("*")
        if path.is_file() and path.suffix in TEXT_SUFFIXES and "__pycache__" not in path.parts
    )


@pytest.mark.parametrize(
    "sample",
    [
        "# as stack" + "-notes.md measured",
        "see ../" + "architecture.md for the layers",
        "the floors of design/" + "architecture.md",
        '"""Fills (upstream' + ' reference, section 4.31)."""',
        "(`fidelity" + "-upstream.md`)",
        "every route of service" + "-spec.md",
        "The Reference" + ", section 5.7, says",
    ],
)
def test_the_scanner_flags_each_way_of_citing_an_outside_document(sample: str) -> None:
    assert len(outside_citations(f"first line\n{sample}\n")) == 1
    assert outside_citations(f"first line\n{sample}\n")[0][0] == 2


@pytest.mark.parametrize(
    "sample",
    [
        "see docs/" + "architecture.md, floors",
        "docs/fidelity-protocol.md, MDDS",
        "deviations from the reference price halve in about four months",
        "the captured reference data (holidays, markets)",
    ],
)
def test_the_scanner_lets_the_repository_own_documents_and_plain_words_pass(sample: str) -> None:
    assert outside_citations(sample) == []


def test_the_scan_reaches_every_scanned_folder() -> None:
    files = scanned_files()
    for folder in SCANNED:
        assert any(path.is_relative_to(ROOT / folder) for path in files), folder
    assert Path(__file__).resolve() in files


def test_no_file_cites_a_document_outside_the_repository() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {cited}"
        for path in scanned_files()
        for number, cited in outside_citations(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert found == [], "write the fact itself (or in docs/) instead of citing:\n" + "\n".join(found)
