"""The one way this project loads its jinja2 templates: an HTML page escapes every value it shows,
whatever the template's file name (jinja2's select_autoescape(["html"]) matches the last suffix, so
"summary.html.j2" went out unescaped), and a Markdown or text document shows values as they are. A
value in a page can be a submitter's name, a system note or a published figure: text someone else
wrote, shown as text."""
from __future__ import annotations

import functools

import jinja2


@functools.lru_cache(maxsize=None)
def page_env(folder: str) -> jinja2.Environment:
    """For HTML pages: every value escaped unless the template marks it safe."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(folder), autoescape=True,
                              keep_trailing_newline=True, undefined=jinja2.StrictUndefined)


@functools.lru_cache(maxsize=None)
def text_env(folder: str) -> jinja2.Environment:
    """For Markdown and text documents: values as they are."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(folder), autoescape=False,
                              keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
