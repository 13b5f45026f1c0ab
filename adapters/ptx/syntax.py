"""The dotted-name tokenizer lives in the core (:mod:`layoutverify.core.dotted`), shared by the PTX
and AMD adapters."""
from layoutverify.core.dotted import MAX_NAME, Token, error, suggest, tokenize  # noqa: F401
