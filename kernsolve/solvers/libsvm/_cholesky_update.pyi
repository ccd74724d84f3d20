# Type stub of the compiled module _cholesky_update.pyx (mypy reads no extension module):
# every name it defines is typed Any.
from typing import Any

def __getattr__(name: str) -> Any: ...
