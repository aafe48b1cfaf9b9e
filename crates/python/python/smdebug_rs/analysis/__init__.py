"""``smdebug.analysis``."""
