"""Layers that do work for nothing: a convolution's bias that the batch norm after it cancels,
and attention written out by hand where PyTorch has a fused kernel (003, "No brainer code
tweaks")."""

import ast
from collections.abc import Iterator

from guidance.engine.code_check.context import Project, make
from guidance.engine.code_check.findings import CodeFinding, Kind
from guidance.engine.code_check.program import SOURCE_ORDER, Program
from guidance.engine.code_check.snippets import Snippet, set_keywords, statement_lines
from guidance.engine.code_check.values import Values

CONVOLUTIONS = frozenset(
    f"torch.nn.{name}"
    for name in (
        "Conv1d",
        "Conv2d",
        "Conv3d",
        "ConvTranspose1d",
        "ConvTranspose2d",
        "ConvTranspose3d",
        "LazyConv1d",
        "LazyConv2d",
        "LazyConv3d",
    )
) | frozenset(f"torch.nn.modules.conv.Conv{n}d" for n in (1, 2, 3))
BATCH_NORMS = frozenset(
    f"torch.nn.{name}"
    for name in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LazyBatchNorm2d")
)
CONV_BIAS_POSITION = (
    7  # Conv*d(in, out, kernel, stride, padding, dilation|output_padding, groups, bias)
)
SEQUENCES = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList"})


def check_conv_bias(project: Project, program: Program, values: Values) -> Iterator[CodeFinding]:
    reported: set[ast.Call] = set()
    for conv in _convs_before_batch_norm(program):
        if conv in reported:
            continue
        reported.add(conv)
        bias = values.argument(conv, "bias", CONV_BIAS_POSITION)
        if bias is not None and bias.known and not bias.value:
            continue
        layer = program.segment(conv.func)
        if bias is not None and not bias.known:
            yield make(
                "conv_bias_before_batchnorm",
                Kind.QUESTION,
                program,
                conv,
                f"This `{layer}` is followed by a batch norm, and its bias comes from "
                f"`{bias.text}`: make sure it is False there, since the batch norm removes it.",
                "Pass bias=False for convolutions followed by a batch norm.",
            )
            continue
        yield make(
            "conv_bias_before_batchnorm",
            Kind.CHANGE,
            program,
            conv,
            f"This `{layer}` is followed directly by a batch norm, which subtracts the mean of "
            "each channel: the convolution's bias is cancelled, yet it is still stored, added and "
            "given gradients at every step.",
            "Build the convolution with bias=False.",
            set_keywords(program, conv, {"bias": "False"}),
        )


def _is(program: Program, node: ast.AST, names: frozenset[str]) -> bool:
    return isinstance(node, ast.Call) and program.qualname(node.func) in names


def _convs_before_batch_norm(program: Program) -> Iterator[ast.Call]:
    """Each convolution followed by a batch norm, found from the file's convolutions (few) rather
    than from every list, call and statement (many)."""
    convs = program.calls_named(*CONVOLUTIONS)
    if not convs:
        return
    # Consecutive in nn.Sequential(...) or a list literal (OrderedDict pairs included).
    for conv in convs:
        following = _next_layer(program, conv)
        if following is not None and _is(program, _layer(following), BATCH_NORMS):
            yield conv
    # In forward: bn(conv(x)), or x = conv(x) followed by x = bn(x); each class's own layers.
    modules = _attribute_modules(program, convs)
    if not modules:
        return
    conv_names = {name for (_, name), layer in modules.items() if _is(program, layer, CONVOLUTIONS)}
    norm_names = {name for (_, name), layer in modules.items() if _is(program, layer, BATCH_NORMS)}
    for conv_call in program.calls_named(*conv_names):
        parent = program.parents.get(conv_call)
        if isinstance(parent, ast.Call) and parent.args == [conv_call]:  # bn(conv(x))
            norm_name = program.qualname(parent.func)
            if norm_name in norm_names:
                owner = _owner(program, parent)
                conv = modules.get((owner, program.qualname(conv_call.func)))
                norm = modules.get((owner, norm_name))
                if conv is not None and norm is not None and _is_pair(program, conv, norm):
                    yield conv
        elif isinstance(parent, ast.Assign) and parent.value is conv_call:
            second = _next_statement(program, parent)
            if second is not None:
                pair = _consecutive(program, modules, conv_names | norm_names, parent, second)
                if pair is not None:
                    yield pair


def _next_layer(program: Program, conv: ast.Call) -> ast.AST | None:
    """The item after the convolution in the nn.Sequential(...) or list literal it is in."""
    item = conv
    container = program.parents.get(conv)
    if isinstance(container, ast.Tuple) and container.elts and container.elts[-1] is conv:
        item, container = container, program.parents.get(container)
    if isinstance(container, ast.List):
        items = container.elts
    elif isinstance(container, ast.Call) and program.qualname(container.func) in SEQUENCES:
        items = container.args
    else:
        return None
    index = next((i for i, each in enumerate(items) if each is item), None)
    return items[index + 1] if index is not None and index + 1 < len(items) else None


def _next_statement(program: Program, statement: ast.stmt) -> ast.stmt | None:
    """The statement after this one in the body of the function it is written in."""
    function = program.parents.get(statement)
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    body = function.body
    index = next((i for i, each in enumerate(body) if each is statement), None)
    return body[index + 1] if index is not None and index + 1 < len(body) else None


def _layer(item: ast.AST) -> ast.AST:
    if isinstance(item, ast.Tuple) and item.elts:  # ("conv1", nn.Conv2d(...))
        return item.elts[-1]
    return item


def _is_pair(program: Program, conv: ast.AST, norm: ast.AST) -> bool:
    return _is(program, conv, CONVOLUTIONS) and _is(program, norm, BATCH_NORMS)


Modules = dict[tuple[ast.AST | None, str], ast.Call]


def _owner(program: Program, node: ast.AST) -> ast.AST | None:
    """The class a node is written in (self.conv1 is that class's), None outside classes."""
    return next((a for a in program.ancestors(node) if isinstance(a, ast.ClassDef)), None)


def _attribute_modules(program: Program, convs: list[ast.Call]) -> Modules:
    """`self.conv1 = nn.Conv2d(...)` and `conv = nn.Conv2d(...)`: what each name holds in
    each class, where it is assigned one layer (the last assignment wins)."""
    modules: Modules = {}
    layers = sorted([*convs, *program.calls_named(*BATCH_NORMS)], key=SOURCE_ORDER)
    for layer in layers:
        node = program.parents.get(layer)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and node.value is layer:
            name = program.qualname(node.targets[0])
            if name:
                modules[(_owner(program, node), name)] = layer
    return modules


def _consecutive(
    program: Program, modules: Modules, names: set[str], first: ast.stmt, second: ast.stmt
) -> ast.Call | None:
    """x = self.conv(...) then y = self.bn(x)."""
    calls = []
    for statement in (first, second):
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            return None
        if not isinstance(statement.value, ast.Call):
            return None
        calls.append(statement.value)
    conv_name, norm_name = program.qualname(calls[0].func), program.qualname(calls[1].func)
    if conv_name not in names or norm_name not in names:
        return None
    owner = _owner(program, first)
    conv, norm = modules.get((owner, conv_name)), modules.get((owner, norm_name))
    produced = program.segment(first.targets[0])  # type: ignore[attr-defined]
    takes = [program.segment(arg) for arg in calls[1].args]
    if conv is None or norm is None or takes != [produced]:
        return None
    return conv if _is_pair(program, conv, norm) else None


# --- hand-written attention --------------------------------------------------------------------

SOFTMAX = frozenset(
    {
        "torch.softmax",
        "torch.nn.functional.softmax",
        "torch.special.softmax",
        "torch.Tensor.softmax",
    }
)
MATMUL = frozenset({"torch.matmul", "torch.bmm", "torch.einsum", "torch.baddbmm"})
SDPA = "scaled_dot_product_attention"
_DEPTH = 4  # names that stand for scores computed in steps: followed this far back


def check_manual_attention(
    project: Project, program: Program, values: Values
) -> Iterator[CodeFinding]:
    for call in program.calls_by_attr.get("softmax", ()):
        scores = next(
            (
                given
                for given in _softmax_inputs(program, call)
                if _is_scores(program, values, given, call, _DEPTH)
            ),
            None,
        )
        if scores is None:
            continue
        if _has_fused_fallback(program, call):
            continue
        q, k, v = _attention_names(program, values, scores, call)
        first, last = statement_lines(program, call)
        yield make(
            "manual_attention",
            Kind.CHANGE,
            program,
            call,
            "This softmax over query-key products is attention written out by hand: it builds "
            "the whole score matrix in GPU memory and runs several kernels, where "
            "torch.nn.functional.scaled_dot_product_attention computes the same result in one "
            "fused, memory-efficient kernel.",
            "Replace the scores, the softmax, its dropout and the product with the values by "
            f"`F.scaled_dot_product_attention({q}, {k}, {v})` (torch.nn.functional), passing "
            "attn_mask=, dropout_p= or is_causal=True as the hand-written code does. "
            + _caveats(program, call),
            Snippet(program.line_text(first, last), "", first, last),
        )


def _caveats(program: Program, softmax: ast.Call) -> str:
    """What the fused kernel does differently: it returns no attention weights, and it drops
    out whenever dropout_p > 0, in evaluation too (it does not see the module's mode)."""
    function = program.function_of(softmax)
    parent = program.parents.get(softmax)
    weights = program.segment(parent.targets[0]) if isinstance(parent, ast.Assign) else None
    returned = weights is not None and any(
        isinstance(node, ast.Return)
        and node.value is not None
        and any(isinstance(n, ast.Name) and n.id == weights for n in ast.walk(node.value))
        for node in program.walk_scope(function)
    )
    said = (
        f"This code returns the attention weights (`{weights}`); the fused kernel does not "
        "compute them, so the module no longer returns them: code that reads them (plots, a "
        "loss on them) must do without or compute them apart."
        if returned
        else "The fused kernel does not compute the attention weights: code that returns or "
        "keeps them can no longer."
    )
    probability = _dropout_probability(program, function, softmax, weights)
    in_a_module = any(isinstance(a, ast.ClassDef) for a in program.ancestors(softmax))
    when = "if self.training else 0.0" if in_a_module else "while training, 0.0 in evaluation"
    return (
        f"{said} It also applies dropout whenever dropout_p > 0, in evaluation too: pass "
        f"dropout_p={probability} {when}."
    )


def _dropout_probability(
    program: Program, function: ast.AST, softmax: ast.Call, weights: str | None
) -> str:
    """The program's own expression for the attention dropout's probability: `self.drop.p`
    for an nn.Dropout module applied to the weights, F.dropout's p; else a placeholder."""
    for node in program.walk_scope(function):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        given = node.args[0]
        on_weights = given is softmax or (
            isinstance(given, ast.Name) and weights is not None and given.id == weights
        )
        name = program.segment(node.func)
        if not on_weights or "drop" not in name.lower():
            continue
        if (program.qualname(node.func) or "").endswith("functional.dropout"):
            p = next((k.value for k in node.keywords if k.arg == "p"), None)
            p = p if p is not None else (node.args[1] if len(node.args) > 1 else None)
            return program.segment(p) if p is not None else "0.5"
        return f"{name}.p"
    return "<its dropout probability>"


def _softmax_inputs(program: Program, call: ast.Call) -> list[ast.AST]:
    """What the softmax is taken of: F.softmax(scores), scores.softmax(-1), or a module's
    self.softmax(scores) (nn.Softmax)."""
    func = call.func
    qualname = program.qualname(func) or ""
    if qualname in SOFTMAX or qualname.endswith("functional.softmax"):
        return call.args[:1]
    if isinstance(func, ast.Attribute):
        base = program.qualname(func.value)
        if base is None or not base.startswith(("torch", "F")):
            return [func.value, *call.args[:1]]
    return []


def _is_scores(program: Program, values: Values, expr: ast.AST, at: ast.AST, depth: int) -> bool:
    """The expression is (or is built from) a matmul of something with a transpose."""
    for node in ast.walk(expr):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return _transposed(node.right) or _transposed(node.left)
        if isinstance(node, ast.Call) and program.qualname(node.func) in MATMUL:
            einsum = program.qualname(node.func) == "torch.einsum"
            return einsum or any(_transposed(a) for a in node.args)
        if isinstance(node, ast.Name) and depth > 0:
            for earlier in _earlier_values(program, values, node, at):
                if _is_scores(program, values, earlier, earlier, depth - 1):
                    return True
    return False


def _transposed(expr: ast.AST) -> bool:
    for node in ast.walk(expr):
        if isinstance(node, ast.Attribute) and node.attr in ("mT", "T", "transpose", "swapaxes"):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "permute":
            return True
    return False


def _earlier_values(program: Program, values: Values, name: ast.Name, at: ast.AST) -> list:
    found = values.assignments(name.id, name)
    if found is None:
        return []
    line = getattr(at, "lineno", 10**9)
    return [v for v in found[1] if v is not None and v.lineno <= line]


def _has_fused_fallback(program: Program, call: ast.Call) -> bool:
    """The same class (or function) also calls scaled_dot_product_attention: the hand-written
    path is a fallback."""
    owner = next(
        (a for a in program.ancestors(call) if isinstance(a, ast.ClassDef)),
        program.function_of(call),
    )
    return any(
        owner is program.tree or owner in program.ancestors(fused)
        for fused in program.calls_by_attr.get(SDPA, ())
    )


def _attention_names(
    program: Program, values: Values, scores: ast.AST, softmax: ast.Call
) -> tuple[str, str, str]:
    """The program's own names for query, key and value, where they are plain names."""
    q, k, v = "q", "k", "v"
    for node in ast.walk(scores):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            q, k = _plain(program, node.left, q), _plain(program, _untransposed(node.right), k)
            break
    parent = program.parents.get(softmax)
    weights = program.segment(parent.targets[0]) if isinstance(parent, ast.Assign) else None
    for node in program.by_type[ast.BinOp]:
        if isinstance(node.op, ast.MatMult) and node.lineno >= softmax.lineno:
            left = program.segment(node.left)
            if node.left is softmax or left == weights:
                v = _plain(program, node.right, v)
                break
    return q, k, v


def _untransposed(expr: ast.AST) -> ast.AST:
    if isinstance(expr, ast.Attribute) and expr.attr in ("mT", "T"):
        return expr.value
    func = expr.func if isinstance(expr, ast.Call) else None
    if isinstance(func, ast.Attribute) and func.attr in ("transpose", "swapaxes", "permute"):
        return func.value
    return expr


def _plain(program: Program, node: ast.AST, fallback: str) -> str:
    text = program.segment(node)
    return text if len(text) <= 30 and "\n" not in text else fallback
