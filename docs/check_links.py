"""Check the internal links of the built documentation: every relative ``href``/``src`` of every
HTML page names a file of the build, and every ``#fragment`` an id of its page.

Usage: ``python docs/check_links.py docs/_build/html`` (``make docs`` runs it). External links
(with a scheme, such as ``https:``) are not followed: the build runs offline.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif name in ("href", "src"):
                self.links.append(value)


def _parse(path: Path, cache: dict[Path, _Page]) -> _Page:
    if path not in cache:
        page = _Page()
        page.feed(path.read_text(encoding="utf-8"))
        cache[path] = page
    return cache[path]


def _pages(root: Path) -> list[Path]:
    """The pages of the build (not the theme's templates under ``_static``)."""
    return [p for p in sorted(root.rglob("*.html")) if "_static" not in p.relative_to(root).parts]


def broken_links(root: Path) -> list[str]:
    """``page: link`` for every internal link of the build at ``root`` that leads nowhere."""
    root = root.resolve()
    cache: dict[Path, _Page] = {}
    broken = []
    for page_path in _pages(root):
        for link in _parse(page_path, cache).links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:", "data:")):
                continue
            target = (page_path.parent / unquote(parts.path)).resolve() if parts.path else page_path
            if target.is_dir():
                target = target / "index.html"
            where = f"{page_path.relative_to(root)}: {link}"
            if root not in target.parents and target != root:
                broken.append(f"{where} (outside the build)")
            elif not target.is_file():
                broken.append(f"{where} (no such file)")
            elif (parts.fragment and target.suffix == ".html"
                  and unquote(parts.fragment) not in _parse(target, cache).ids):
                broken.append(f"{where} (no such anchor)")
    return broken


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else "docs/_build/html")
    pages = len(_pages(root))
    if not pages:
        print(f"check_links: no HTML pages under {root}: build the docs first", file=sys.stderr)
        return 2
    broken = broken_links(root)
    for line in broken:
        print(f"broken link: {line}", file=sys.stderr)
    print(f"check_links: {pages} pages, {len(broken)} broken internal links")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
