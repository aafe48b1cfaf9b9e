"""The parts of ``smdebug.core`` that analysis scripts import."""
