"""The README is a front page: short, and every page it links to is there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_front_page_stays_short_and_its_links_resolve() -> None:
    readme = ROOT / "README.md"
    assert readme.stat().st_size < 8 * 1024
    text = readme.read_text()
    assert "make test" in text
    links = re.findall(r"\]\(((?:docs|assets)/[^)#]+)\)", text)
    assert links and all((ROOT / link).is_file() for link in links), links


def test_every_docs_page_links_back_and_its_links_resolve() -> None:
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text()
        assert "(../README.md)" in text, page
        for link in re.findall(r"\]\((\.\./[^)#\s]+)\)", text):
            assert (page.parent / link).resolve().exists(), (page.name, link)
