"""The public surface of the original's classes against ours: every public method and
attribute of an original class (and of an instance of it) is present on ours, methods
with the same parameters in the same order, of the same kind and with the same defaults
(test_api_walk.py and the framework files call :func:`differences`)."""

import inspect

_MISSING = object()

# The original's hook classes share one base (CallbackHook) whose writer state is public:
# its writers, timeline and profiler objects, caches and flags, and the write_* steps of
# its callback. A script drives a hook through the calls the framework's callback makes
# and the documented hook API, which ours has.
HOOK_MACHINERY = {
    "GRADIENT_PREFIX", "INPUT_TENSOR_SUFFIX", "INVALID_TAG_CHARACTERS",
    "OUTPUT_TENSOR_SUFFIX", "SCALAR_PREFIX", "chief_worker", "collection_manager",
    "custom_tensors_to_save", "data_type_name", "exported_collections", "first_process",
    "has_default_configuration", "has_default_hook_configuration", "hook_from_config",
    "hvd_reader", "is_smdataparallel_profiling", "last_saved_step",
    "log_outstanding_timeline_metrics", "metrics_writer", "mode_steps",
    "prepared_collections", "profiler_config_parser", "record_trace_events",
    "scalar_cache", "should_save_tensor_or_collection", "state_store", "tb_writers",
    "tensor_to_collections", "timeline_writer", "training_run", "writer",
    "written_tensor_name_for_step", "write_average_shap", "write_feature_importances",
    "write_full_shap", "write_hyperparameters", "write_labels", "write_losses",
    "write_metrics", "write_predictions", "write_tree_model", "export_collections",
    "logger",
}


def _params(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    out = []
    for p in sig.parameters.values():
        if p.name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        default = _MISSING if p.default is p.empty else p.default
        keyword_only = p.kind == p.KEYWORD_ONLY
        out.append((p.name, keyword_only, default))
    return out


def _same_default(a, b):
    """Whether ours (``b``) takes every call the original's (``a``) takes, meaning the
    same: a default where the original has none takes them all; ``mode=None`` here means
    ``ModeKeys.GLOBAL`` (docs/src/python.md), the original's default."""
    if a is _MISSING:
        return True
    if b is _MISSING:
        return False
    if b is None and type(a).__name__ == "ModeKeys" and a.name == "GLOBAL":
        return True
    if isinstance(a, _Source):
        # A default read from source that is not a literal (``ModeKeys.GLOBAL``): the
        # same when ours names the same member.
        if b is None and a.text == "ModeKeys.GLOBAL":
            return True
        owner, _, member = a.text.rpartition(".")
        if owner == "CollectionKeys":
            from smdebug_rs.core.collection import CollectionKeys

            return getattr(CollectionKeys, member, _MISSING) == b
        return member in repr(b)
    try:
        return bool(a == b) or repr(a) == repr(b)
    except Exception:  # noqa: BLE001 - an object without == (an array): compare reprs
        return repr(a) == repr(b)


def _accepts_more(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())


def _compare_method(name, theirs, ours):
    return _compare_params(name, _params(theirs), ours)


def _compare_params(name, tp, ours):
    op = _params(ours)
    if tp is None or op is None:
        return []
    problems = []
    ours_by_name = {n: (k, d) for n, k, d in op}
    for i, (n, kw, d) in enumerate(tp):
        if n not in ours_by_name:
            if not _accepts_more(ours):
                problems.append(f"{name}: no parameter {n!r}")
            continue
        okw, od = ours_by_name[n]
        if not kw and (i >= len(op) or op[i][0] != n):
            problems.append(f"{name}: parameter {n!r} is not at position {i}")
        if not kw and okw:
            problems.append(f"{name}: parameter {n!r} is keyword-only")
        if not _same_default(d, od):
            shown = lambda v: "required" if v is _MISSING else repr(v)  # noqa: E731
            problems.append(f"{name}: {n}={shown(od)}, the original's {n}={shown(d)}")
    return problems


def hook_differences(theirs, ours, out, ignore=()):
    """:func:`differences` of hook class ``ours`` against the original's ``theirs``, each
    instance writing under folder ``out``; the original's writer machinery
    (``HOOK_MACHINERY``) and ``ignore`` left out."""
    a = theirs(out_dir=str(out / "theirs"))
    b = ours(out_dir=str(out / "ours"))
    try:
        return differences(theirs, ours, a, b, HOOK_MACHINERY | set(ignore))
    finally:
        b.close()


def differences(theirs, ours, their_obj=None, our_obj=None, ignore=()):
    """What the public surface of class ``ours`` (and instance ``our_obj``) lacks or has
    otherwise than class ``theirs`` (and instance ``their_obj``), as sorted lines."""
    problems = []
    names = {n for n in dir(theirs) if not n.startswith("_")}
    if their_obj is not None:
        names |= {n for n in vars(their_obj) if not n.startswith("_")}
    names.add("__init__")
    for name in sorted(names - set(ignore)):
        t = inspect.getattr_static(theirs, name, _MISSING)
        if name == "__init__":
            t_fn, o_fn = theirs.__init__, ours.__init__
            if ours.__init__ is object.__init__ or "slot wrapper" in repr(ours.__init__):
                o_fn = ours.__new__
            problems += _compare_method(f"{theirs.__name__}()", t_fn, o_fn)
            continue
        present = hasattr(ours, name) or (our_obj is not None and hasattr(our_obj, name))
        if not present:
            problems.append(f"missing: {name}")
            continue
        if callable(getattr(theirs, name, None)) and not isinstance(t, property):
            o = getattr(ours, name, None)
            if o is not None and callable(o):
                problems += _compare_method(name, getattr(theirs, name), o)
    return sorted(problems)


class _Source:
    """A default as its source text, where it is not a literal."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _source_params(fn):
    import ast

    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out = []

    def value(node):
        if node is None:
            return _MISSING
        try:
            return ast.literal_eval(node)
        except ValueError:
            return _Source(ast.unparse(node))

    for arg, d in zip(positional, defaults):
        if arg.arg not in ("self", "cls"):
            out.append((arg.arg, False, value(d)))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((arg.arg, True, value(d)))
    return out


def source_differences(files, classname, ours, our_obj, ignore=()):
    """:func:`differences` of the original's class ``classname`` read from its source
    ``files`` (for a class whose module cannot be imported where ours runs): its methods,
    properties and the ``self.<name>`` it assigns, through its bases defined in ``files``."""
    import ast

    classes = {}
    for path in files:
        with open(path) as f:
            for node in ast.walk(ast.parse(f.read())):
                if isinstance(node, ast.ClassDef):
                    classes.setdefault(node.name, node)
    methods, attrs, seen = {}, set(), []
    todo = [classname]
    while todo:
        name = todo.pop(0)
        node = classes.get(name)
        if node is None or name in seen:
            continue
        seen.append(name)
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(isinstance(d, ast.Name) and d.id == "property"
                       for d in item.decorator_list):
                    attrs.add(item.name)
                else:
                    methods.setdefault(item.name, _source_params(item))
                for sub in ast.walk(item):
                    if (isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store)
                            and isinstance(sub.value, ast.Name) and sub.value.id == "self"):
                        attrs.add(sub.attr)
        todo += [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
    problems = []
    for name in sorted((set(methods) | attrs) - set(ignore)):
        if name.startswith("_") and name != "__init__":
            continue
        if name == "__init__":
            problems += _compare_params(f"{classname}()", methods[name], ours.__init__)
            continue
        if not (hasattr(ours, name) or hasattr(our_obj, name)):
            problems.append(f"missing: {name}")
        elif name in methods and callable(getattr(ours, name, None)):
            problems += _compare_params(name, methods[name], getattr(ours, name))
    return sorted(problems)
