"""``smdebug.pytorch.Collection``: a collection that can also take a module's inputs and
outputs (``add_module_tensors``)."""

from smdebug_rs.core.collection import Collection as _BaseCollection
from smdebug_rs.core.collection import CollectionKeys

__all__ = ["Collection", "CollectionKeys"]


class Collection(_BaseCollection):
    """A collection of the PyTorch hook: regexes, tensor names, configs, and modules whose
    inputs and/or outputs it holds. The modules become the regexes ``<module>_input_`` /
    ``<module>_output_`` when the hook's first step starts (the module's name is the one
    ``register_module`` gave it), as the original's ``_prepare_collections`` does."""

    def __init__(self, name, include_regex=None, tensor_names=None, reduction_config=None,
                 save_config=None, save_histogram=True):
        super().__init__(name, include_regex, tensor_names, reduction_config, save_config,
                         save_histogram)
        self._modules = {}

    def add_module_tensors(self, module, inputs=False, outputs=True):
        """Saves ``module``'s inputs and/or outputs in this collection."""
        self._modules[module] = (inputs, outputs)

    @property
    def modules(self):
        """``{module: (include_inputs, include_outputs)}``."""
        return self._modules

    def _module_regexes(self):
        """The regexes of the modules added, once they are registered (named)."""
        out = []
        for m, (inputs, outputs) in self._modules.items():
            name = getattr(m, "_module_name", None)
            if name is None:
                continue
            if inputs:
                out.append(name + "_input_")
            if outputs:
                out.append(name + "_output_")
        return out

    @classmethod
    def _adopt(cls, c):
        """``c`` (a collection of ``smdebug_rs.Hook``) as one of this class, in place."""
        if not isinstance(c, cls):
            c.__class__ = cls
            c._modules = {}
        return c
