"""The Hugging Face callback writes through the PyTorch hook: its singleton is PyTorch's
(``python -m smdebug_rs run`` closes it when the script ends)."""

from smdebug_rs.pytorch.singleton_utils import (
    del_hook,
    get_collection,
    get_hook,
    json_config_path,
    set_hook,
    use_smdebug,
)

__all__ = ["get_hook", "get_collection", "set_hook", "del_hook", "use_smdebug",
           "json_config_path"]  # SINGLETON_API
