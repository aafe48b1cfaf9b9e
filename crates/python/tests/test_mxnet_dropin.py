"""The MXNet hook's public API against the original's (api_walk.py)."""


# The original's block callbacks (ours are registered by register_block under other names)
# and its flag of having written the model's symbol graph.
MXNET_MACHINERY = {"forward_hook", "forward_pre_hook", "exported_model"}


def test_the_hooks_api_is_the_originals(tmp_path):
    import smdebug.mxnet as theirs

    import smdebug_rs.mxnet as ours
    from api_walk import hook_differences

    found = hook_differences(theirs.Hook, ours.Hook, tmp_path, MXNET_MACHINERY)
    assert not found, "\n".join(found)
