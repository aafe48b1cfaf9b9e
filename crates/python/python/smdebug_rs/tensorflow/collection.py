"""``smdebug.tensorflow.Collection``: a collection that can also take a Keras layer's inputs
and outputs (``add_keras_layer``)."""

from smdebug_rs.core.collection import Collection as _BaseCollection
from smdebug_rs.core.collection import CollectionKeys
from smdebug_rs.tensorflow.names import keras2_name

__all__ = ["Collection", "CollectionKeys"]


class Collection(_BaseCollection):
    """A collection of the Keras hook: regexes, tensor names, configs."""

    def add_keras_layer(self, layer, inputs=False, outputs=True):
        """Saves ``layer``'s inputs and/or outputs in this collection (run eagerly): the
        names ``<layer.name>/inputs`` / ``<layer.name>/outputs`` (and ``_<n>`` for several),
        as the hook names them."""
        if inputs:
            self.include("^" + layer.name + "/inputs")
        if outputs:
            self.include("^" + layer.name + "/outputs")

    def add(self, arg):
        """Adds tensors by name (the original's ``coll.add``): a Keras variable (named as
        the hook names the model's weights), a name, or a list, tuple or set of them. The
        original's graph tensors and operations of TensorFlow 1 have no counterpart in
        eager Keras 3."""
        if isinstance(arg, (list, tuple, set)):
            for a in arg:
                self.add(a)
        elif isinstance(arg, str):
            self.add_tensor_name(arg)
        else:
            self.add_tensor_name(keras2_name(arg))

    @classmethod
    def _adopt(cls, c):
        """``c`` (a collection of ``smdebug_rs.Hook``) as one of this class, in place."""
        if not isinstance(c, cls):
            c.__class__ = cls
        return c
