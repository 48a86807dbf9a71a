"""The old name of ``heron.libraries``, kept one release: ``import heron.books`` and
``from heron.books.search import search`` still work, with a ``DeprecationWarning``."""

import sys

from heron.deprecated import moved_package

sys.modules[__name__] = moved_package(__name__, "heron.libraries")
