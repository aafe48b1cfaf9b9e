"""The parameters of a registered root module as the PyTorch hook saves them: ``(saved name,
parameter)`` in ``named_parameters()`` order, kept between steps.

``named_parameters()`` walks every submodule and builds every name: done at each step that
saves, it costs more than checking that nothing changed. :class:`ModuleParams` walks once,
and again only when the module tree changed since: a parameter or submodule added,
replaced or removed anywhere (``module.fc = nn.Linear(...)``, ``register_parameter``, a
``.to()`` that makes new ``Parameter`` objects, parametrizations), seen by comparing each
module's ``_parameters`` and ``_modules`` entries — the only things ``named_parameters()``
reads — with what they held at the walk. A module whose class overrides how torch walks
the tree (``named_parameters``, ``_named_members``, ``named_modules``, as FSDP does) is
walked at every call.
"""

import torch

__all__ = ["ModuleParams"]

# What nn.Module.named_parameters() goes through: overriding one of them may change its
# answer in ways the layout below does not show.
_WALK = ("named_parameters", "_named_members", "named_modules")


def _standard(module):
    cls = type(module)
    return all(getattr(cls, a) is getattr(torch.nn.Module, a) for a in _WALK)


def _layout(modules):
    # The objects each module holds, by identity, each dict's entries closed by a None: the
    # walk keeps them alive, so an id cannot be taken by a new object while it is compared.
    out = []
    for m in modules:
        out.extend(map(id, m._parameters.values()))
        out.append(None)
        out.extend(map(id, m._modules.values()))
        out.append(None)
    return out


class ModuleParams:
    """``(root name + "_" + parameter name, parameter)`` of every parameter of ``root``
    (frozen ones too), as ``root.named_parameters()`` gives them now."""

    __slots__ = ("_root", "_prefix", "_modules", "_layout", "_items", "_cacheable")

    def __init__(self, root):
        self._root = root
        self._prefix = None
        self._modules = ()
        self._layout = None
        self._items = []
        self._cacheable = False

    def items(self, root_name):
        """The list (walked again if the tree changed; do not modify it)."""
        prefix = root_name + "_"
        if not (self._cacheable and prefix == self._prefix
                and _layout(self._modules) == self._layout):
            self._walk(prefix)
        return self._items

    def _walk(self, prefix):
        root = self._root
        modules = list(root.modules())
        self._cacheable = all(_standard(m) for m in modules)
        self._modules = modules
        self._layout = _layout(modules)
        self._prefix = prefix
        self._items = [(prefix + name, p) for name, p in root.named_parameters()]
