"""What the ISA adapters (:mod:`layoutverify.adapters.ptx`, :mod:`layoutverify.adapters.amd`)
share: the tokenizer of dotted instruction names (:mod:`.dotted`) and matrix-instruction register
fragments stated as formulas (:mod:`.fragment`). Not a framework of its own; imports only the
core.
"""
