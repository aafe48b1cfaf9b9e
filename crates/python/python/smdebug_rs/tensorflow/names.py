"""The names the Keras hook saves variables under: smdebug 1.0.34's Keras 2 names, from
Keras 3's variables (``keras2_name``, ``gradient_name``, ``optimizer_variable_names``)."""

__all__ = ["GRADIENT_PREFIX", "TAPE_WEIGHT_PREFIX", "keras2_name", "gradient_name",
           "optimizer_variable_names"]

GRADIENT_PREFIX = "gradients/"
TAPE_WEIGHT_PREFIX = "weights/"


def keras2_name(variable, model=None):
    """The Keras 2 name smdebug 1.0.34 saved a variable under, from a Keras 3 variable.

    Keras 3 names a variable by its ``path``: ``<layer path>/<name>``, where a layer of a
    ``Sequential`` model has the model's name in its path and a layer of a functional model
    has not (``sequential/dense/kernel``, ``hid/kernel``). Keras 2 named it
    ``<layer>/<name>:0`` (``dense/kernel:0``). The mapping: the path, without the leading
    ``<model.name>/`` of the model the hook watches when it is there, plus ``:0``. So
    ``sequential/dense/kernel`` → ``dense/kernel:0``, ``hid/kernel`` → ``hid/kernel:0``, a
    ``Sequential`` named ``inner`` inside a functional model: ``inner/dense/kernel`` →
    ``inner/dense/kernel:0``. Without a model
    (a ``wrap_tape`` loop with no ``register_model``) the path stays whole
    (``sequential/dense/kernel:0``). A plain ``tf.Variable`` keeps its TensorFlow name."""
    path = getattr(variable, "path", None)
    if path is None:
        name = variable.name
        return name if ":" in name else name + ":0"
    if model is not None:
        prefix = model.name + "/"
        if path.startswith(prefix):
            path = path[len(prefix):]
    return path + ":0"


def gradient_name(variable, model=None):
    """``gradients/<keras2_name without :0>Grad``, the original's gradient names."""
    return GRADIENT_PREFIX + keras2_name(variable, model).split(":")[0] + "Grad"


def optimizer_variable_names(optimizer, model=None):
    """``[(name, variable)]`` of ``optimizer.variables``, named in the form of the Keras 2
    optimizers (``Adam/m/dense/kernel:0``, ``Adam/iteration:0``) from Keras 3's names.

    Keras 3 names a slot variable ``<variable path, / as _>_<slot>``
    (``sequential_dense_kernel_momentum``) and the others by their own name (``iteration``,
    ``learning_rate``). A slot variable of a model variable becomes
    ``<optimizer class>/<slot>/<keras2_name of the variable>``
    (``Adam/momentum/dense/kernel:0``, ``Adam/velocity/dense/kernel:0``,
    ``SGD/momentum/dense_1/bias:0``), the others ``<optimizer class>/<name>:0``
    (``Adam/iteration:0``, ``Adam/learning_rate:0``). Keras 3's slot names are kept (Keras
    2's Adam said ``m`` and ``v``)."""
    cls = type(optimizer).__name__
    variables = optimizer.variables
    if callable(variables):  # tf.keras 2 optimizers: a method
        variables = variables()
    owners = {}
    for v in (model.trainable_weights if model is not None else []):
        path = getattr(v, "path", None)
        if path is not None:
            owners[path.replace("/", "_") + "_"] = v
    named = []
    for ov in variables:
        name = ov.name.split(":")[0]
        # The longest prefix: `seq_dense_1_kernel_` must not be taken for `seq_dense_`.
        prefix = max((p for p in owners if name.startswith(p) and len(name) > len(p)),
                     key=len, default=None)
        if prefix is None:
            named.append((f"{cls}/{name}:0", ov))
        else:
            slot = name[len(prefix):]
            named.append((f"{cls}/{slot}/{keras2_name(owners[prefix], model)}", ov))
    return named
