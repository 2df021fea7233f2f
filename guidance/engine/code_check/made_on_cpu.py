"""Where a tensor moved to the GPU was made: the factory calls (torch.zeros, torch.arange...)
inside the expression moved, through the operations that keep a tensor where it is (arithmetic
with Python numbers, torch.exp, .long(), .view()...), or in the one helper function it calls.

A rewrite puts device= on those factories and drops the move. It is offered only where that
cannot change what the program computes: every other operand is a Python number (a CPU tensor
there would now meet a GPU one and raise), and nothing in between moves or detaches the tensor."""

import ast
from dataclasses import dataclass

from guidance.engine.code_check.program import Program

_FACTORY_NAMES = (
    "zeros",
    "ones",
    "rand",
    "randn",
    "randint",
    "randperm",
    "empty",
    "full",
    "arange",
    "eye",
    "linspace",
    "logspace",
    "tensor",
    "zeros_like",
    "ones_like",
    "rand_like",
    "randn_like",
    "randint_like",
    "empty_like",
    "full_like",
)
FACTORIES = frozenset(f"torch.{name}" for name in _FACTORY_NAMES)
# torch functions whose result is on the device of their tensor arguments, which take no device=.
_SAME_DEVICE_FUNCTIONS = frozenset(
    f"torch.{name}"
    for name in (
        "exp",
        "log",
        "sqrt",
        "rsqrt",
        "sin",
        "cos",
        "tanh",
        "sigmoid",
        "abs",
        "floor",
        "ceil",
        "round",
        "clamp",
        "pow",
        "cumsum",
        "cumprod",
        "flip",
        "outer",
        "cat",
        "stack",
        "meshgrid",
        "tril",
        "triu",
    )
)
# Tensor methods that keep the tensor on its device: dtypes and shapes (whose arguments are
# sizes and dimensions), and elementwise maths (whose arguments must be numbers).
_SHAPES = frozenset(
    {
        "long",
        "int",
        "float",
        "double",
        "half",
        "bool",
        "short",
        "byte",
        "bfloat16",
        "view",
        "reshape",
        "unsqueeze",
        "squeeze",
        "expand",
        "repeat",
        "flatten",
        "transpose",
        "permute",
        "t",
        "contiguous",
    }
)
_SAME_DEVICE_METHODS = frozenset(
    {
        "exp",
        "log",
        "sqrt",
        "sin",
        "cos",
        "pow",
        "clamp",
        "cumsum",
        "flip",
        "tril",
        "triu",
        "repeat_interleave",
        "mul",
        "add",
        "sub",
        "div",
        "uniform_",
        "normal_",
        "fill_",
    }
)
_VARIABLE = frozenset({"torch.autograd.Variable", "Variable"})  # old code's identity wrapper
_NUMBER_MAKERS = frozenset({"int", "float", "len"})
_SCALAR_TYPES = frozenset({"int", "float"})
_DEPTH = 3  # names followed this far back to their value


@dataclass(frozen=True)
class Origin:
    """The factory calls the moved tensor is made by. `unplaced`: operands not known to be
    numbers (a CPU tensor there would meet the GPU one); `leaf`: a factory asks for
    requires_grad (made on the device, the leaf the optimizer sees changes). `helper`: the
    function that makes it (a fix there is the user's to write: its other callers may want
    the CPU). Device= on the factories and the move dropped compute the same thing only where
    none of these holds."""

    factories: tuple[ast.Call, ...]
    unplaced: tuple[ast.AST, ...] = ()
    leaf: bool = False
    helper: ast.FunctionDef | None = None
    helper_program: Program | None = None
    local: ast.Name | None = None  # moved through a name made earlier: its other uses unseen

    @property
    def safe(self) -> bool:
        return not self.unplaced and not self.leaf and self.helper is None and self.local is None


_Made = tuple[list[ast.Call], list[ast.AST]]  # factories, operands not known to be numbers


def origin(program: Program, expr: ast.AST, helpers: "Helpers") -> Origin | None:
    """The factories `expr` is made from, None where it is not made from any (data, a model,
    something the checker cannot see)."""
    found = None if isinstance(expr, (ast.List, ast.Tuple)) else _made(program, expr)
    if found is not None:
        factories, unplaced = found
        leaf = any(k.arg == "requires_grad" for f in factories for k in f.keywords)
        return Origin(tuple(factories), tuple(unplaced), leaf) if factories else None
    if isinstance(expr, ast.Name):
        return _local(program, expr)
    if isinstance(expr, ast.Call) and not expr.keywords and not _has_starred(expr):
        helper = helpers.find(program, expr.func)
        if helper is not None:
            function, where = helper
            made = _returned(where, function)
            if made is not None:
                return Origin(made, helper=function, helper_program=where)
    return None


def _local(program: Program, name: ast.Name) -> Origin | None:
    """A name set once, before the move and in the move's own scope, from factories:
    `betas = torch.linspace(...)`, later `betas.to(device)` (or `betas = betas.to(device)`).
    Never rewritten: the name's other uses may want the CPU tensor."""
    move = program.parents.get(program.parents.get(name))
    bindings = [b for b in _bindings(program, name) if b is not move]
    if len(bindings) != 1 or not isinstance(bindings[0], ast.expr):
        return None
    value = bindings[0]
    if value.lineno >= name.lineno or program.scope_of(value) is not program.scope_of(name):
        return None
    made = _made(program, value)
    if made is None or not made[0]:
        return None
    leaf = any(k.arg == "requires_grad" for f in made[0] for k in f.keywords)
    return Origin(tuple(made[0]), tuple(made[1]), leaf, local=name)


def _has_starred(call: ast.Call) -> bool:
    return any(isinstance(a, ast.Starred) for a in call.args)


def _made(program: Program, expr: ast.AST) -> _Made | None:
    """(factories, operands not known to be numbers) where `expr` is built from factories,
    with operations that keep a tensor on its device; None where it is not (data, a model, a
    call the checker does not know)."""
    if isinstance(expr, ast.Call):
        qualname = program.qualname(expr.func) or ""
        if qualname in FACTORIES:
            if any(k.arg == "device" for k in expr.keywords):
                return None  # already made on a device: the move is another matter
            return [expr], []
        if qualname in _SAME_DEVICE_FUNCTIONS or (
            qualname in _VARIABLE and len(expr.args) == 1 and not expr.keywords
        ):
            return _combined(program, [*expr.args, *(k.value for k in expr.keywords)])
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in _SAME_DEVICE_METHODS | _SHAPES:
            receiver = _made(program, func.value)
            if receiver is None or not receiver[0]:
                return None
            if func.attr in _SHAPES:  # sizes and dimensions: never a tensor
                return receiver
            rest = _combined(program, [*expr.args, *(k.value for k in expr.keywords)])
            if rest is None:
                return None
            return receiver[0] + rest[0], receiver[1] + rest[1]
        return None
    if isinstance(expr, ast.BinOp):
        return _combined(program, [expr.left, expr.right], need_tensor=True)
    if isinstance(expr, ast.UnaryOp):
        return _made(program, expr.operand)
    if isinstance(expr, (ast.List, ast.Tuple)):
        return _combined(program, expr.elts, need_tensor=True)
    if isinstance(expr, ast.Subscript) and _constant_index(expr.slice):
        return _made(program, expr.value)
    return None


def _combined(program: Program, parts: list[ast.AST], need_tensor: bool = False) -> _Made | None:
    """Operands or arguments: each made from factories, or a number. An operand the checker
    cannot place (a name that may hold a CPU tensor) keeps the finding but not the rewrite."""
    factories: list[ast.Call] = []
    unplaced: list[ast.AST] = []
    for part in parts:
        made = _made(program, part)
        if made is not None:
            factories += made[0]
            unplaced += made[1]
        elif not _number(program, part, _DEPTH):
            unplaced.append(part)
    if need_tensor and not factories:
        return None
    return factories, unplaced


def _constant_index(index: ast.AST) -> bool:
    if isinstance(index, ast.Tuple):
        return all(_constant_index(each) for each in index.elts)
    if isinstance(index, ast.Slice):
        return all(p is None or isinstance(p, ast.Constant) for p in (index.lower, index.upper))
    return isinstance(index, ast.Constant) or (
        isinstance(index, ast.UnaryOp) and isinstance(index.operand, ast.Constant)
    )


def _number(program: Program, expr: ast.AST, depth: int) -> bool:
    """A Python number, as far as the file shows: a literal, arithmetic of numbers, math.*,
    a loop index over range(), a parameter typed or defaulted as a number, a name set once
    to a number."""
    if depth < 0:
        return False
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool)
    if isinstance(expr, ast.UnaryOp):
        return _number(program, expr.operand, depth)
    if isinstance(expr, ast.BinOp):
        return _number(program, expr.left, depth) and _number(program, expr.right, depth)
    if isinstance(expr, ast.Call):
        # math.*, int(), float() and len() give a Python number whatever they are given.
        qualname = program.qualname(expr.func) or ""
        if qualname in _NUMBER_MAKERS or qualname.startswith("math."):
            return True
        if qualname in ("abs", "min", "max"):
            return all(_number(program, a, depth - 1) for a in expr.args)
        return False
    if isinstance(expr, ast.Attribute):
        return (program.qualname(expr) or "") in ("math.pi", "math.e", "math.tau")
    if isinstance(expr, ast.Name):
        bindings = _bindings(program, expr)
        return bool(bindings) and all(_bound_to_number(program, b, depth - 1) for b in bindings)
    return False


def _bindings(program: Program, name: ast.Name) -> list[ast.AST]:
    """Where `name` gets its value in the nearest scope that binds it (a class body is not
    seen from its methods): assignments, loops, parameters; bound any other way, None."""
    scope = program.scope_of(name)
    while True:
        found = _bindings_in(program, scope, name)
        if found or scope is program.tree:
            return found
        scope = program.scope_of(scope)
        while isinstance(scope, ast.ClassDef):
            scope = program.scope_of(scope)


def _bindings_in(program: Program, scope: ast.AST, name: ast.Name) -> list:
    found: list = []
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        arguments = scope.args
        positional = [*arguments.posonlyargs, *arguments.args]
        every = [*positional, *arguments.kwonlyargs]
        with_default = positional[len(positional) - len(arguments.defaults) :]
        defaults = {a.arg: d for a, d in zip(with_default, arguments.defaults, strict=True)}
        defaults.update(
            {a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)}
        )
        for argument in every:
            if argument.arg == name.id:
                found.append(("parameter", argument, defaults.get(argument.arg)))
    for node in program.walk_scope(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name.id:
                    found.append(node.value)
                elif _binds(target, name.id):
                    found.append(None)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            if isinstance(node.target, ast.Name) and node.target.id == name.id:
                found.append(node.value)
        elif isinstance(node, (ast.For, ast.comprehension)):
            if isinstance(node.target, ast.Name) and node.target.id == name.id:
                found.append(("loop", node.iter))
            elif _binds(node.target, name.id):
                found.append(None)
        elif _binds_unseen(node, name.id):
            found.append(None)
    return found


def _binds_unseen(node: ast.AST, name: str) -> bool:
    """`with ... as name`, `import name`, `global name`: bound to what the file does not say."""
    if isinstance(node, ast.withitem):
        return _binds(node.optional_vars, name)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name).split(".")[0] == name for a in node.names)
    return isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names


def _binds(target: ast.AST | None, name: str) -> bool:
    return target is not None and any(
        isinstance(n, ast.Name) and n.id == name for n in ast.walk(target)
    )


def _bound_to_number(program: Program, binding: object, depth: int) -> bool:
    if binding is None:
        return False
    if isinstance(binding, tuple) and binding[0] == "loop":
        loop = binding[1]
        return isinstance(loop, ast.Call) and program.qualname(loop.func) == "range"
    if isinstance(binding, tuple) and binding[0] == "parameter":
        _, argument, default = binding
        annotation = argument.annotation
        if isinstance(annotation, ast.Name) and annotation.id in _SCALAR_TYPES:
            return True
        return default is not None and _number(program, default, depth)
    return isinstance(binding, ast.AST) and _number(program, binding, depth)


def _returned(program: Program, function: ast.FunctionDef) -> tuple[ast.Call, ...] | None:
    """The factories a helper's single return makes its result from."""
    returns = [
        node
        for node in program.walk_scope(function)
        if isinstance(node, ast.Return) and node.value is not None
    ]
    if len(returns) != 1:
        return None
    made = _made(program, returns[0].value)  # type: ignore[arg-type]
    return tuple(made[0]) if made and made[0] else None


class Helpers:
    """The program's functions by name, across the files sent: `make_noise(8)` in train.py
    finds `def make_noise` in that file or in the module it is imported from."""

    def __init__(self, programs: list[Program]):
        self.programs = programs
        self._by_file: dict[str, dict[str, list[ast.FunctionDef]]] = {}

    def _functions(self, program: Program) -> dict[str, list[ast.FunctionDef]]:
        found = self._by_file.get(program.name)
        if found is None:
            found = {}
            for node in program.tree.body:  # module-level helpers: callable by plain name
                if isinstance(node, ast.FunctionDef):
                    found.setdefault(node.name, []).append(node)
            self._by_file[program.name] = found
        return found

    def find(self, program: Program, func: ast.AST) -> tuple[ast.FunctionDef, Program] | None:
        if not isinstance(func, ast.Name):
            return None
        here = self._functions(program).get(func.id, [])
        if len(here) == 1:
            return here[0], program
        qualname = program.qualname(func) or ""
        module, _, name = qualname.rpartition(".")
        if not module:
            return None
        path = module.replace(".", "/") + ".py"
        for other in self.programs:
            if other is not program and (other.name == path or other.name.endswith("/" + path)):
                there = self._functions(other).get(name, [])
                if len(there) == 1:
                    return there[0], other
        return None
