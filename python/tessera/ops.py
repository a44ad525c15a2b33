"""One function per registered op, generated from the engine's op schemas.

    y = tessera.ops.Conv(x, w, b, kernel_shape=[5, 5], pads=[2, 2, 2, 2])

Inputs are positional (tessera.Value objects of one graph; None for an absent optional input; a
variadic last input takes the rest); attributes are keyword arguments with the schema's defaults.
An attribute named like a Python keyword takes a trailing underscore (`from_=`). `name=` names the node, `num_outputs=` asks for optional outputs. Each call adds one node to the
inputs' graph and infers its types at once: an error (wrong rank, unknown attribute, ...) raises
tessera.Error naming the node. Returns the output Value, or a tuple of them.
"""

import inspect as _inspect
import keyword as _keyword

from tessera import _tessera

_RESERVED = ("name", "num_outputs")


def _graph_of(op, args):
    for a in args:
        if isinstance(a, _tessera.Value):
            return a
    raise TypeError(f"{op}: needs at least one tessera.Value input (to know the graph)")


def _make(schema):
    op = schema["name"]
    ins = schema["inputs"]
    attrs = schema["attrs"]
    attr_names = {a["name"] for a in attrs}
    variadic = bool(ins) and ins[-1]["variadic"]

    def fn(*inputs, name="", num_outputs=0, **kwargs):
        # An attribute named like a Python keyword ("from") is passed with a trailing underscore.
        kwargs = {(k[:-1] if k.endswith("_") and _keyword.iskeyword(k[:-1]) else k): v for k, v in kwargs.items()}
        unknown = [k for k in kwargs if k not in attr_names]
        if unknown:
            have = ", ".join(sorted(attr_names)) or "none"
            raise TypeError(f"{op}() got an unexpected attribute '{unknown[0]}' (attributes: {have})")
        if not variadic and len(inputs) > len(ins):
            raise TypeError(f"{op}() takes at most {len(ins)} inputs ({len(inputs)} given)")
        first = _graph_of(op, inputs)
        return first.graph.op(op, list(inputs), kwargs, num_outputs, name)

    params = []
    for i, p in enumerate(ins):
        pname = p["name"] if p["name"].isidentifier() and not _keyword.iskeyword(p["name"]) else f"input{i}"
        if p["variadic"]:
            params.append(_inspect.Parameter(pname, _inspect.Parameter.VAR_POSITIONAL))
        else:
            default = None if p["optional"] else _inspect.Parameter.empty
            if params and params[-1].default is not _inspect.Parameter.empty and default is _inspect.Parameter.empty:
                default = None  # a required input after an optional one (rare): positional anyway
            params.append(_inspect.Parameter(pname, _inspect.Parameter.POSITIONAL_ONLY, default=default))
    for a in attrs:
        if a["name"] in _RESERVED or not a["name"].isidentifier():
            continue
        pname = a["name"] + "_" if _keyword.iskeyword(a["name"]) else a["name"]
        default = _inspect.Parameter.empty if a["required"] else a["default"]
        params.append(_inspect.Parameter(pname, _inspect.Parameter.KEYWORD_ONLY, default=default))
    params.append(_inspect.Parameter("name", _inspect.Parameter.KEYWORD_ONLY, default=""))
    params.append(_inspect.Parameter("num_outputs", _inspect.Parameter.KEYWORD_ONLY, default=0))
    fn.__name__ = fn.__qualname__ = op
    fn.__signature__ = _inspect.Signature(params)
    lines = [schema["doc"], "", f"Category: {schema['category']}."]
    if ins:
        lines += ["", "Inputs:"]
        for p in ins:
            tag = " (optional)" if p["optional"] else (" (variadic)" if p["variadic"] else "")
            lines.append(f"    {p['name']}{tag}: {p['doc']}")
    outs = schema["outputs"]
    if outs:
        lines += ["", "Outputs:"]
        for p in outs:
            tag = " (optional: ask with num_outputs)" if p["optional"] else ""
            lines.append(f"    {p['name']}{tag}: {p['doc']}")
    if attrs:
        lines += ["", "Attributes:"]
        for a in attrs:
            d = "required" if a["required"] else f"default {a['default']!r}"
            lines.append(f"    {a['name']} ({a['kind']}, {d}): {a['doc']}")
    lines += ["", "Differentiable." if schema["differentiable"] else "Not differentiable."]
    fn.__doc__ = "\n".join(lines)
    fn.__module__ = __name__
    return fn


__all__ = []
for _s in _tessera.op_schemas():
    globals()[_s["name"]] = _make(_s)
    __all__.append(_s["name"])
del _s
