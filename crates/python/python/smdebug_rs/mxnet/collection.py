"""``smdebug.mxnet.Collection``: a collection that can also take a block's inputs and
outputs (``add_block_tensors``)."""

from smdebug_rs.core.collection import Collection as _BaseCollection
from smdebug_rs.core.collection import CollectionKeys

__all__ = ["Collection", "CollectionKeys"]


class Collection(_BaseCollection):
    """A collection of the MXNet hook: regexes, tensor names, configs."""

    def add_block_tensors(self, block, inputs=False, outputs=True):
        """Saves ``block``'s inputs and/or outputs in this collection: the regexes
        ``<block.name>_input_*`` / ``<block.name>_output_*``, as the original (a Gluon block
        has its name from construction on)."""
        if inputs:
            self.include(block.name + "_input_*")
        if outputs:
            self.include(block.name + "_output_*")

    @classmethod
    def _adopt(cls, c):
        """``c`` (a collection of ``smdebug_rs.Hook``) as one of this class, in place."""
        if not isinstance(c, cls):
            c.__class__ = cls
        return c
