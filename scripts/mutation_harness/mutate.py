"""The mutants of a module: one changed source span each, by the operators listed in
``scripts/mutation.py``'s docstring; a mutant written back into the source text."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from . import REPO

SKIP_CALLS = {"fsync", "fsync_dir"}


@dataclass
class Mutant:
    module: str
    line: int
    source: str
    mutation: str
    start: tuple[int, int]
    end: tuple[int, int]
    replacement: str


_CMP_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
# A difference that only counts one way: passes every test whose unequal values all sort the
# same way round (cosmic-ray's ``!=`` -> ``<``, measured on compare/tensors.py: no test had a
# replay tensor smaller than the original's, which the mutant called "not comparable").
_ONE_SIDED: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {ast.NotEq: (ast.Lt, ast.Gt)}
_BIN_SWAP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
}


def _docstring_nodes(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0]))
    return out


def _skipped_subtrees(tree: ast.AST) -> set[int]:
    """Annotations, ``__all__``, ``@overload`` stubs and ``if TYPE_CHECKING`` blocks: not
    behaviour."""
    skip: set[int] = set()

    def mark(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign | ast.arg):
            mark(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            mark(node.returns)
            if any(_call_name_of(d) == "overload" for d in node.decorator_list):
                mark(node)  # a typing stub: the function that follows replaces it
        elif (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
        ) or (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)):
            mark(node)
    return skip


def _call_name_of(f: ast.expr) -> str:
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _call_name(call: ast.Call) -> str:
    return _call_name_of(call.func)


def mutants_of(module: str) -> list[Mutant]:
    text = (REPO / module).read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    docs, skip = _docstring_nodes(tree), _skipped_subtrees(tree)
    out: list[Mutant] = []

    def add(node: ast.AST, mutation: str, new: ast.AST, statement: bool = False) -> None:
        repl = ast.unparse(new) if statement else f"({ast.unparse(new)})"
        out.append(
            Mutant(
                module,
                node.lineno,  # type: ignore[attr-defined]
                lines[node.lineno - 1].strip(),  # type: ignore[attr-defined]
                mutation,
                (node.lineno, node.col_offset),  # type: ignore[attr-defined]
                (node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
                repl,
            )
        )

    for node in ast.walk(tree):
        if id(node) in skip or id(node) in docs:
            continue
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                swap = _CMP_SWAP.get(type(op))
                for into in (swap, *_ONE_SIDED.get(type(op), ())):
                    if into is None:
                        continue
                    new = ast.Compare(node.left, list(node.ops), node.comparators)
                    new.ops[i] = into()
                    add(node, f"{ast.unparse(node)} -> {ast.unparse(new)}", new)
        elif isinstance(node, ast.BoolOp):
            other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            add(
                node,
                f"{type(node.op).__name__.lower()} -> {type(other).__name__.lower()}",
                ast.BoolOp(other, node.values),
            )
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            add(node, f"drop not: {ast.unparse(node)}", node.operand)
        elif isinstance(node, ast.BinOp) and type(node.op) in _BIN_SWAP:
            swapped = ast.BinOp(node.left, _BIN_SWAP[type(node.op)](), node.right)
            add(node, f"{ast.unparse(node)} -> {ast.unparse(swapped)}", swapped)
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            add(node, f"{node.value} -> {not node.value}", ast.Constant(not node.value))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            add(node, f"{node.value} -> {node.value + 1}", ast.Constant(node.value + 1))
            if node.value == 0:  # the first taken from the end: cosmic-ray's flat[0] -> flat[-1]
                add(node, "0 -> -1", ast.Constant(-1))
        elif isinstance(node, ast.Constant) and type(node.value) is float:
            add(
                node,
                f"{node.value} -> {node.value * 2 or 1.0}",
                ast.Constant(node.value * 2 or 1.0),
            )
        elif isinstance(node, ast.Return) and node.value is not None:
            if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                add(node, "return X -> return None", ast.Return(None), statement=True)
        elif isinstance(node, ast.AugAssign):  # a running total that keeps only the last
            plain = ast.Assign([node.target], node.value, lineno=node.lineno)
            add(node, f"{ast.unparse(node)[:60]} -> =", plain, statement=True)
        elif isinstance(node, ast.Continue | ast.Break):
            other_stmt: ast.stmt = ast.Break() if isinstance(node, ast.Continue) else ast.Continue()
            word = ast.unparse(node)
            add(node, f"{word} -> {ast.unparse(other_stmt)}", other_stmt, statement=True)
        elif isinstance(node, ast.Raise):
            add(node, "raise -> pass", ast.Pass(), statement=True)
        elif (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and _call_name(node.value) not in SKIP_CALLS
        ):
            add(node, f"drop call: {ast.unparse(node)[:60]}", ast.Pass(), statement=True)
    out.sort(key=lambda m: (m.start, m.mutation))
    return out


def apply(text: str, m: Mutant) -> str:
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode()))
    raw = text.encode()

    def pos(lc: tuple[int, int]) -> int:
        return offsets[lc[0] - 1] + lc[1]  # col_offset counts UTF-8 bytes

    return (raw[: pos(m.start)] + m.replacement.encode() + raw[pos(m.end) :]).decode()


def _compiles(text: str, module: str) -> bool:
    try:
        compile(text, module, "exec")
    except SyntaxError:
        return False
    return True
