"""One file of the user's program, parsed once with Python's own parser and indexed in one pass:
every node's parent, the nodes by type, the imports resolved to qualified names, the calls by
qualified name and by their last name, and the source text of any node. Never runs or imports
the code: `ast.parse` only reads it."""

import ast
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
# Nodes in the order they are written (a sort key, in C: faster than a lambda).
SOURCE_ORDER = attrgetter("lineno", "col_offset")


class NotPython(Exception):
    """The text does not parse: `line` is the syntax error's, None where there is none."""

    def __init__(self, reason: str, line: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.line = line


@dataclass
class Program:
    name: str
    text: str
    tree: ast.Module
    lines: list[str]  # split on "\n" only, as the parser counts lines
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict)  # all but constants
    by_type: dict[type, list[ast.AST]] = field(default_factory=lambda: defaultdict(list))
    aliases: dict[str, str] = field(default_factory=dict)  # local name -> qualified name
    star_modules: list[str] = field(default_factory=list)  # `from m import *`, in order
    calls: list[ast.Call] = field(default_factory=list)
    calls_by_name: dict[str, list[ast.Call]] = field(default_factory=lambda: defaultdict(list))
    calls_by_attr: dict[str, list[ast.Call]] = field(default_factory=lambda: defaultdict(list))
    members: dict[ast.AST, list[ast.AST]] = field(default_factory=lambda: defaultdict(list))
    _qualnames: dict[ast.AST, str | None] = field(default_factory=dict)

    # --- where nodes are ---------------------------------------------------------------

    def column(self, node: ast.AST) -> int:
        """The node's column from 1, in characters (the parser counts UTF-8 bytes)."""
        return self._chars(node.lineno, node.col_offset) + 1

    def _chars(self, line: int, byte_offset: int) -> int:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if text.isascii():
            return byte_offset
        return len(text.encode()[:byte_offset].decode(errors="ignore"))

    def position(self, line: int, byte_offset: int) -> tuple[int, int]:
        """(line, character column from 0) of a parser position."""
        return line, self._chars(line, byte_offset)

    def start(self, node: ast.AST) -> tuple[int, int]:
        return self.position(node.lineno, node.col_offset)

    def end(self, node: ast.AST) -> tuple[int, int]:
        return self.position(node.end_lineno, node.end_col_offset)

    def segment(self, node: ast.AST) -> str:
        """The node's own source text."""
        (line, col), (end_line, end_col) = self.start(node), self.end(node)
        if line == end_line:
            return self.lines[line - 1][col:end_col]
        parts = [self.lines[line - 1][col:], *self.lines[line : end_line - 1]]
        return "\n".join([*parts, self.lines[end_line - 1][:end_col]])

    def line_text(self, first: int, last: int) -> str:
        """Whole lines `first`..`last` (from 1), as written."""
        return "\n".join(self.lines[first - 1 : last])

    def indent(self, line: int) -> str:
        text = self.lines[line - 1]
        return text[: len(text) - len(text.lstrip())]

    @cached_property
    def indent_unit(self) -> str:
        """One level of indentation as the file writes it (a tab, two or four spaces): the
        first block's body against its header. Four spaces where the file has no block."""
        for node in ast.walk(self.tree):
            body = getattr(node, "body", None)
            if not isinstance(node, ast.stmt) or not isinstance(body, list) or not body:
                continue
            inner, outer = self.indent(body[0].lineno), self.indent(node.lineno)
            if body[0].lineno != node.lineno and inner.startswith(outer) and inner != outer:
                return inner[len(outer) :]
        return "    "

    # --- what nodes are ----------------------------------------------------------------

    def qualname(self, node: ast.AST | None) -> str | None:
        """`nn.Conv2d` -> "torch.nn.Conv2d" through the file's imports; a dotted name the
        imports do not explain stays as written; None for anything but names and attributes.
        Iterative: a 2,000-attribute chain is as cheap as a short one."""
        if node in self._qualnames:
            return self._qualnames[node]
        found = self._qualname(node)
        self._qualnames[node] = found
        return found

    def _qualname(self, node: ast.AST | None) -> str | None:
        attrs: list[str] = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.aliases.get(node.id)
        if base is None:
            base = self._star_name(node.id) or node.id
        return ".".join([base, *reversed(attrs)])

    def _star_name(self, name: str) -> str | None:
        # `from torch.nn import *`: a name the file does not bind itself comes from there.
        if not self.star_modules or name in self.assigned_names:
            return None
        return f"{self.star_modules[-1]}.{name}"

    @cached_property
    def assigned_names(self) -> frozenset[str]:
        names = {n.id for n in self.by_type[ast.Name] if isinstance(n.ctx, ast.Store)}
        names.update(n.name for t in (ast.FunctionDef, ast.ClassDef) for n in self.by_type[t])
        return frozenset(names)

    @cached_property
    def attributes(self) -> dict[str, list[ast.Attribute]]:
        """Every `x.name` by its name: what several rules ask of all attributes, read once."""
        found: dict[str, list[ast.Attribute]] = defaultdict(list)
        for node in self.by_type[ast.Attribute]:
            found[node.attr].append(node)
        return found

    @cached_property
    def attribute_assignments(self) -> dict[str, list[tuple[ast.Assign, ast.Attribute]]]:
        """`x.y.z = value` statements by the last attribute assigned (z), in source order."""
        found: dict[str, list[tuple[ast.Assign, ast.Attribute]]] = defaultdict(list)
        for node in sorted(self.by_type[ast.Assign], key=SOURCE_ORDER):
            for target in node.targets:
                if isinstance(target, ast.Attribute):
                    found[target.attr].append((node, target))
        return found

    def calls_named(self, *qualnames: str) -> list[ast.Call]:
        return [c for q in qualnames for c in self.calls_by_name.get(q, ())]

    def scope_of(self, node: ast.AST) -> ast.AST:
        """The function, lambda, class or module whose names the node sees first."""
        child, parent = node, self.parents.get(node)
        while parent is not None and type(parent) not in _OPENERS:
            child, parent = parent, self.parents.get(parent)
        if parent is None:
            return self.tree
        if not isinstance(child, _INNER_PARTS) and child in _outer_parts(parent):
            return self.scope_of(parent)  # a decorator or base: it runs around the scope
        return parent

    def function_of(self, node: ast.AST) -> ast.AST:
        """The function (or the module) the node runs in: classes are looked through."""
        scope = self.scope_of(node)
        while isinstance(scope, ast.ClassDef):
            scope = self.scope_of(scope)
        return scope

    def statement_of(self, node: ast.AST) -> ast.stmt:
        while not isinstance(node, ast.stmt) and node in self.parents:
            node = self.parents[node]
        return node  # type: ignore[return-value]

    def ancestors(self, node: ast.AST):
        parent = self.parents.get(node)
        while parent is not None:
            yield parent
            parent = self.parents.get(parent)

    def walk_scope(self, scope: ast.AST) -> list[ast.AST]:
        """Every node of a scope's body but its names and constants, without those of nested
        functions or classes (their decorators, bases and annotations of returns run in this
        scope, so they are in)."""
        return self.members.get(scope, [])


# Parts of a function or class evaluated in the scope around it.
_OUTER_FIELDS = frozenset({"decorator_list", "bases", "keywords", "returns"})
# ...never a statement of its body nor its parameters: those need not be looked for there.
_INNER_PARTS = (ast.stmt, ast.arguments)
# Operator and context nodes are shared singletons in CPython's trees, the others hold plain
# values (or aliases, read from their import): never walked.
_SKIPPED_FIELDS = frozenset(
    {"ctx", "op", "ops", "id", "attr", "arg", "name", "names", "module", "level", "kind"}
    | {"type_comment", "conversion", "is_async", "simple", "type_params", "type_ignores"}
)
_FIELDS: dict[type, tuple[str, ...]] = {}
# Nodes with nothing below them worth a scope entry: their scope is their parent's.
_LEAVES = frozenset({ast.Name, ast.Constant})
# Nodes that open a scope of their own for names assigned inside them (besides the module).
_OPENERS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef})


def _outer_parts(scope: ast.AST) -> tuple[ast.AST, ...]:
    """The direct children of a function or class that run in the scope around it."""
    return tuple(child for name in _OUTER_FIELDS for child in _as_list(getattr(scope, name, None)))


def _as_list(value: object) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def parse_program(name: str, text: str) -> Program:
    """The file parsed and indexed; NotPython where the parser refuses it."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    try:
        tree = ast.parse(text, filename=name)
    except SyntaxError as error:
        reason = (error.msg or "invalid syntax").rstrip(".")
        raise NotPython(reason, error.lineno) from None
    except (RecursionError, MemoryError):
        raise NotPython("nested too deeply for Python's parser to read") from None
    except ValueError as error:  # e.g. a NUL character in the source
        raise NotPython(str(error)) from None
    program = Program(name, text, tree, text.split("\n"))
    _index(program)
    return program


def _index(program: Program) -> None:
    """One pass over the tree: parents, nodes by type, each node's scope and each scope's
    nodes. Iterative, with each type's fields looked up once, and names and constants (half
    the nodes, with nothing below them) recorded where they are met: the checker's hot loop."""
    parents, by_type, members = program.parents, program.by_type, program.members
    tree, AST, leaves, openers, constant = program.tree, ast.AST, _LEAVES, _OPENERS, ast.Constant
    stack: list[tuple[ast.AST, ast.AST]] = [(tree, tree)]
    by_type[ast.Module].append(tree)
    while stack:
        node, scope = stack.pop()
        kind = type(node)
        fields = _FIELDS.get(kind)
        if fields is None:
            fields = _FIELDS[kind] = tuple(f for f in kind._fields if f not in _SKIPPED_FIELDS)
        opens = kind in openers
        for name in fields:
            value = getattr(node, name, None)
            if value is None:
                continue
            inner = node if opens and name not in _OUTER_FIELDS else scope
            for item in value if type(value) is list else (value,):
                item_kind = type(item)
                if item_kind is constant:  # no rule asks for a constant's surroundings
                    by_type[item_kind].append(item)
                elif item_kind in leaves:
                    by_type[item_kind].append(item)
                    parents[item] = node
                elif isinstance(item, AST):
                    by_type[item_kind].append(item)
                    parents[item] = node
                    members[inner].append(item)
                    stack.append((item, inner))
    for node in by_type[ast.Import]:
        for alias in node.names:
            if alias.asname:
                program.aliases[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                program.aliases[top] = top
    for node in by_type[ast.ImportFrom]:
        module = "." * node.level + (node.module or "")
        for alias in node.names:
            if alias.name == "*":
                program.star_modules.append(module)
            else:
                program.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
    calls = sorted(by_type[ast.Call], key=SOURCE_ORDER)
    program.calls = calls
    by_attr, by_name, qualname = program.calls_by_attr, program.calls_by_name, program.qualname
    for call in calls:
        func = call.func
        kind = type(func)
        if kind is ast.Attribute:
            by_attr[func.attr].append(call)
        elif kind is ast.Name:
            by_attr[func.id].append(call)
        name = qualname(func)
        if name:
            by_name[name].append(call)
