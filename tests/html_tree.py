"""A small HTML tree for tests: pages are parsed with the standard library's
``html.parser`` and queried by tag, class and ``data-*`` attribute, so tests check
structure rather than bytes."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}  # fmt: skip


@dataclasses.dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    parent: Node | None = None
    children: list[Node | str] = dataclasses.field(default_factory=list)

    def iter(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter()

    def text(self) -> str:
        parts = []
        for child in self.children:
            parts.append(child if isinstance(child, str) else child.text())
        return "".join(parts)

    def clean(self) -> str:
        return " ".join(self.text().split())

    def matches(self, tag: str | None, attrs: dict[str, str]) -> bool:
        if tag is not None and self.tag != tag:
            return False
        for key, value in attrs.items():
            if key == "class_":
                if value not in self.classes():
                    return False
            elif self.attrs.get(key.replace("_", "-")) != value:
                return False
        return True

    def find_all(self, tag: str | None = None, **attrs: str) -> list[Node]:
        """Descendants (and self) with ``tag`` and attributes; ``class_`` matches one
        class, ``data_x`` the attribute ``data-x``."""
        return [n for n in self.iter() if n.matches(tag, attrs)]

    def find(self, tag: str | None = None, **attrs: str) -> Node:
        found = self.find_all(tag, **attrs)
        assert found, f"no <{tag or '*'}> with {attrs}"
        return found[0]

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def field(self, name: str) -> str:
        return self.find(data_field=name).clean()


class TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Node(tag, {k: v or "" for k, v in attrs}, self.current))

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        assert node is not None and node.parent is not None, f"stray </{tag}>"
        self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def parse(page: str) -> Node:
    builder = TreeBuilder()
    builder.feed(page)
    builder.close()
    assert builder.current is builder.root, f"unclosed <{builder.current.tag}>"
    return builder.root


def css_urls(text: str) -> list[str]:
    """Every ``url(...)`` target in a stylesheet or style attribute."""
    return [u.strip(" '\"") for u in re.findall(r"url\(([^)]*)\)", text, re.IGNORECASE)]


def assert_self_contained(doc: Node) -> str:
    """No element that loads anything, no link but to a fragment, no event
    handler, one inline stylesheet; returns that stylesheet."""
    for node in doc.iter():
        assert node.tag not in {"script", "link", "img", "iframe", "object", "embed", "base"}
        for attr in ("src", "srcset", "href", "xlink:href", "action", "poster", "data"):
            value = node.attrs.get(attr)
            if value is not None:
                assert value.startswith("#"), (node.tag, attr, value)
        for value in node.attrs.values():
            for url in css_urls(value):
                assert url.startswith("#"), (node.tag, value)
        assert not any(a.startswith("on") for a in node.attrs), node.attrs
    styles = [n.text() for n in doc.iter() if n.tag == "style"]
    assert len(styles) == 1
    return styles[0]
