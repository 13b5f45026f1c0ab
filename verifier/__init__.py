"""layoutverify: the canonical layout form, the checker, analyses and the CLI."""
from .errors import LayoutError, NotInvertibleError, ParseError, SizeLimitError, UnsupportedError
from .layout import Layout, logical_dims

__all__ = ["Layout", "logical_dims", "LayoutError", "ParseError", "UnsupportedError",
           "NotInvertibleError", "SizeLimitError"]
__version__ = "0.1.0"
