"""The documentation site (issue 54, item 6): docs/ builds with MkDocs in strict mode, without a
warning, every page of docs/ is in mkdocs.yml's nav, and the site has a page for each."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def nav_pages(nav) -> list[str]:
    """Every file the nav names, in order, however deep its sections go."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    return [page for item in nav for page in nav_pages(item)]


def built_page(site: Path, page: str) -> Path:
    """Where MkDocs writes a page with its default directory URLs: index.md at the root, x.md as x/."""
    stem = page.removesuffix(".md")
    return site / "index.html" if stem == "index" else site / stem / "index.html"


@pytest.fixture(scope="module")
def config() -> dict:
    from mkdocs.config import load_config

    return load_config(str(ROOT / "mkdocs.yml"))


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    return site, proc


def test_the_site_builds_strictly_without_a_warning(build):
    site, proc = build
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "WARNING" not in output, output
    assert (site / "index.html").is_file()


def test_every_page_is_in_the_nav(config):
    """A page left out of the nav is reachable only by its address: a defect."""
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    named = nav_pages(config["nav"])
    assert sorted(set(named)) == pages, {"not in the nav": sorted(set(pages) - set(named)),
                                         "in the nav, not in docs/": sorted(set(named) - set(pages))}
    assert len(named) == len(set(named)), "a page is in the nav twice"


def test_the_site_has_a_page_for_each(build, config):
    site, proc = build
    assert proc.returncode == 0, proc.stderr
    missing = [page for page in nav_pages(config["nav"]) if not built_page(site, page).is_file()]
    assert not missing, missing


def test_the_build_is_strict_and_checks_links(config):
    """strict: true in the file itself, so a plain ``mkdocs build`` refuses a broken link too, and
    the checks that would otherwise only inform (pages left out of the nav, anchors) warn."""
    assert config["strict"] is True
    assert config["validation"]["nav"]["omitted_files"] >= logging.WARNING
    assert config["validation"]["links"]["not_found"] >= logging.WARNING
    assert config["validation"]["links"]["anchors"] >= logging.WARNING
