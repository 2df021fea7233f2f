"""What a value is, statically: a literal, a name assigned exactly once in its scope, a key of a
literal dict (or `dict(...)`) passed as `**kw`. Anything else (a parameter, an attribute such as
`args.workers`, a computed value, a dict changed after it was made) is unknown: the checker then
asks about the expression by its text, and never claims a problem."""

import ast
from dataclasses import dataclass, field

from guidance.engine.code_check.program import FUNCTIONS, Program

# Methods that change a dict in place: a dict they are called on is no longer the literal.
_MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__"})
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_DEPTH = 8
# The nodes that bind or change a name; every other node of a scope is passed over.
_BINDINGS = frozenset(
    {ast.Assign, ast.NamedExpr, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor}
    | {ast.comprehension, ast.withitem, ast.Import, ast.ImportFrom, ast.ExceptHandler}
    | {ast.Global, ast.Nonlocal, ast.Delete, ast.Call, *_DEFINITIONS}
)  # names that stand for names: followed this far, no further (and never in a loop)


@dataclass(frozen=True)
class Value:
    """An argument as the call gives it. `node`: where it is written (the keyword, or the
    positional expression; the `**kw` spread when it comes from there)."""

    node: ast.AST
    known: bool
    value: object = None
    text: str = ""  # the expression as written, for questions ("args.workers")
    spread: bool = False  # it comes from (or may come from) a `**kw` or `*args`


@dataclass
class _Scope:
    assigned: dict[str, list[ast.expr | None]] = field(default_factory=dict)
    mutated: set[str] = field(default_factory=set)


class Values:
    """Value questions about one file, with each scope's assignments read once."""

    def __init__(self, program: Program):
        self.program = program
        self._scopes: dict[ast.AST, _Scope] = {}

    # --- names ------------------------------------------------------------------------

    def scope(self, node: ast.AST) -> _Scope:
        found = self._scopes.get(node)
        if found is None:
            found = self._scopes[node] = self._read_scope(node)
        return found

    def _read_scope(self, scope_node: ast.AST) -> _Scope:
        scope = _Scope()

        def unknown(name: str) -> None:
            scope.assigned.setdefault(name, []).append(None)

        if isinstance(scope_node, FUNCTIONS):
            args = scope_node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if arg is not None:
                    unknown(arg.arg)
        for node in self.program.walk_scope(scope_node):
            if type(node) not in _BINDINGS:
                continue
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        scope.assigned.setdefault(target.id, []).append(node.value)
                    else:
                        self._other_target(target, scope, unknown)
            elif isinstance(node, ast.NamedExpr) or (
                isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
            ):
                scope.assigned.setdefault(node.target.id, []).append(node.value)
            elif isinstance(node, ast.AugAssign):
                if isinstance(node.target, ast.Name):
                    unknown(node.target.id)
                    scope.mutated.add(node.target.id)
                else:
                    self._other_target(node.target, scope, unknown)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                self._other_target(node.target, scope, unknown)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                self._other_target(node.optional_vars, scope, unknown)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    unknown((alias.asname or alias.name).split(".")[0])
            elif isinstance(node, _DEFINITIONS) or (
                isinstance(node, ast.ExceptHandler) and node.name
            ):
                unknown(node.name)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                for name in node.names:
                    unknown(name)
            elif isinstance(node, ast.Delete):
                for target in node.targets:
                    self._other_target(target, scope, unknown)
            elif _mutates(node):
                scope.mutated.add(node.func.value.id)
        if scope_node is self.program.tree:
            # `global w` in a function: w may be assigned there too, so not once.
            for node in self.program.by_type[ast.Global]:
                for name in node.names:
                    unknown(name)
        return scope

    @staticmethod
    def _other_target(target: ast.AST, scope: _Scope, unknown) -> None:
        stack = [target]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Name):
                unknown(node.id)
            elif isinstance(node, (ast.Tuple, ast.List)):
                stack.extend(node.elts)
            elif isinstance(node, ast.Starred):
                stack.append(node.value)
            elif isinstance(node, (ast.Subscript, ast.Attribute)):
                # kw["x"] = ... changes the dict kw: it is no longer the literal it was made as.
                base = node.value
                if isinstance(base, ast.Name):
                    scope.mutated.add(base.id)

    def assignments(self, name: str, at: ast.AST) -> tuple[ast.AST, list[ast.expr | None]] | None:
        """The scope that binds `name` as seen from `at`, and what it assigns there."""
        scope_node = self.program.scope_of(at)
        first = True
        while True:
            # A class body's names are not seen from the functions inside it.
            if first or not isinstance(scope_node, ast.ClassDef):
                scope = self.scope(scope_node)
                if name in scope.assigned:
                    return scope_node, scope.assigned[name]
            if scope_node is self.program.tree:
                return None
            first = False
            scope_node = self.program.scope_of(scope_node)

    def single_assignment(self, name: ast.Name) -> ast.expr | None:
        """The one expression `name` is assigned from in its scope, None where it is assigned
        more than once, not at all here, or in a way that hides the value."""
        found = self.assignments(name.id, name)
        if found is None:
            return None
        scope_node, values = found
        if len(values) != 1 or values[0] is None or name.id in self.scope(scope_node).mutated:
            return None
        return values[0]

    # --- values -----------------------------------------------------------------------

    def value(self, expr: ast.AST, node: ast.AST | None = None) -> Value:
        """What `expr` is, statically. `node` is where the finding would point (default expr)."""
        where = node if node is not None else expr
        resolved = self._resolve(expr)
        if resolved is not None:
            return Value(where, True, resolved[0], self.program.segment(expr))
        return Value(where, False, None, self._origin(expr))

    def _origin(self, expr: ast.AST) -> str:
        """An unknown value's text where it comes from: `workers = args.workers` then
        num_workers=workers says `args.workers`; a parameter or a name assigned twice, itself."""
        text = self.program.segment(expr)
        for _ in range(_DEPTH):
            if not isinstance(expr, ast.Name):
                break
            assigned = self.single_assignment(expr)
            if assigned is None:
                break
            expr = assigned
        origin = self.program.segment(expr)
        return origin if len(origin) <= 60 and "\n" not in origin else text

    def _resolve(self, expr: ast.AST) -> tuple[object] | None:
        for _ in range(_DEPTH):
            if isinstance(expr, ast.Constant):
                return (expr.value,)
            if (
                isinstance(expr, ast.UnaryOp)
                and isinstance(expr.op, (ast.USub, ast.Not))
                and isinstance(expr.operand, ast.Constant)
            ):
                operand = expr.operand.value
                if isinstance(expr.op, ast.Not):
                    return (not operand,)
                if isinstance(operand, (int, float)) and not isinstance(operand, bool):
                    return (-operand,)
                return None
            if isinstance(expr, ast.Name):
                assigned = self.single_assignment(expr)
                if assigned is None:
                    return None
                expr = assigned
                continue
            if isinstance(expr, ast.Attribute):
                # torch.float16 and the like: known by their qualified name.
                qualname = self.program.qualname(expr)
                if qualname and qualname.startswith("torch."):
                    return (Symbol(qualname),)
            return None
        return None

    def dict_items(self, expr: ast.AST) -> dict[str, ast.expr] | None:
        """The keys of a literal dict (`{...}` or `dict(...)`), or of a name assigned once from
        one and never changed; None where they are not all known."""
        for _ in range(_DEPTH):
            if isinstance(expr, ast.Name):
                assigned = self.single_assignment(expr)
                if assigned is None:
                    return None
                expr = assigned
                continue
            if isinstance(expr, ast.Dict):
                items: dict[str, ast.expr] = {}
                for key, value in zip(expr.keys, expr.values, strict=True):
                    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                        return None  # `**other` inside, or a computed key
                    items[key.value] = value
                return items
            if (
                isinstance(expr, ast.Call)
                and isinstance(expr.func, ast.Name)
                and expr.func.id == "dict"
                and not expr.args
                and all(k.arg for k in expr.keywords)
            ):
                return {k.arg: k.value for k in expr.keywords}  # type: ignore[misc]
            return None
        return None

    def argument(self, call: ast.Call, name: str, position: int | None = None) -> Value | None:
        """The call's argument `name` (given by keyword, at `position`, or in a literal
        `**kw`); None where the call does not give it and nothing unknown could."""
        for keyword in call.keywords:
            if keyword.arg == name:
                return self.value(keyword.value, keyword)
        if position is not None:
            for index, arg in enumerate(call.args):
                if isinstance(arg, ast.Starred):
                    return Value(call, False, None, self.program.segment(arg), spread=True)
                if index == position:
                    return self.value(arg)
        for keyword in call.keywords:
            if keyword.arg is None:
                items = self.dict_items(keyword.value)
                if items is None:
                    text = "**" + self.program.segment(keyword.value)
                    return Value(keyword, False, None, text, spread=True)
                if name in items:
                    found = self.value(items[name], items[name])
                    return Value(keyword, found.known, found.value, found.text, spread=True)
        return None


def _mutates(node: ast.AST) -> bool:
    """`kw.update(...)` and the like, on a plain name."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _MUTATORS
        and isinstance(node.func.value, ast.Name)
    )


@dataclass(frozen=True)
class Symbol:
    """A known dotted constant such as torch.bfloat16 (compared by its name)."""

    qualname: str

    @property
    def last(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]
