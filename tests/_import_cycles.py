"""Import cycles of a package, module by module: ``python tests/_import_cycles.py ledger``
prints them as JSON (tests/test_layers.py runs it on this checkout and on broken copies)."""

from __future__ import annotations

import json
import sys


def module_cycles(package: str) -> list[list[str]]:
    """Strongly connected components of more than one module. ``TYPE_CHECKING`` imports and
    imports inside functions count: a lazy import that only dodges a cycle is a cycle."""
    import grimp

    graph = grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=None)

    def children(module: str) -> list[str]:
        return sorted(graph.find_modules_directly_imported_by(module))

    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(children(root)))]
        while work:  # Tarjan's algorithm, without recursion
            node, todo = work[-1]
            for child in todo:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(children(child))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while not component or component[-1] != node:
                        component.append(stack.pop())
                        on_stack.discard(component[-1])
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return sorted(cycles)


def importers_of_root(package: str) -> list[str]:
    import grimp

    graph = grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=None)
    return sorted(graph.find_modules_that_directly_import(package))


if __name__ == "__main__":
    name = sys.argv[1]
    print(json.dumps({"cycles": module_cycles(name), "root_importers": importers_of_root(name)}))
