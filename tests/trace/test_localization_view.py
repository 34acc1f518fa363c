"""The web view's drawing of a localization: the module tree, one line per module, with the
first differing module marked and its parents in bold; user text escaped."""

from __future__ import annotations

from ledger.ui.localization import module_tree
from ledger.ui.pages import render


def _page(loc: dict[str, object]) -> str:
    d = {"a": "x", "b": "y", "code": {"same": True}, "config": [], "data": [], "metrics": {}}
    return render("diff.html", root="../", live=False, curves_href="", d=d | {"localization": loc})


def test_the_tree_marks_the_culprit_and_its_parents() -> None:
    modules = [["<model>", "Net", False], ["a", "Block", False], ["a.b", "Linear", True]]
    modules += [["a.c", "ReLU", True], ["<i>", "Evil<b>", True]]
    loc = {"found": True, "line": "step 3: x → y", "suggestion": "do", "doc": "docs/d.md#x"}
    html = _page(loc | {"module": "a.b", "tree": module_tree(modules, "a.b")})
    tree = html[html.index('<pre id="module-tree">') : html.index("</pre>")].splitlines()
    assert tree == [
        '<pre id="module-tree"><strong>&lt;model&gt; (Net)</strong>',
        "  <strong>a (Block)</strong>",
        '    <mark class="culprit">a.b (Linear)</mark>  ← first to differ',
        "    a.c (ReLU)",
        "  &lt;i&gt; (Evil&lt;b&gt;)",
    ]
    assert '<p id="localization">step 3: x → y</p>' in html


def test_no_tree_without_a_module_and_nothing_without_traces() -> None:
    html = _page({"found": True, "line": "step 0: batch differs", "suggestion": "s", "doc": "d"})
    assert '<p id="localization">step 0: batch differs</p>' in html
    assert "module-tree" not in html
    assert "Where they diverged" not in _page(None)  # type: ignore[arg-type]
